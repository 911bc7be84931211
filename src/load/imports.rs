//! Whether a script is an XState source: it imports `xstate` (or
//! `@xstate/*`), or a module of the repository that re-exports them. Other
//! libraries export functions called `createMachine` too (Zag's
//! `@zag-js/core`, for one); a file that imports nothing from XState is not
//! read, whatever it calls.
//!
//! The module specifiers are read by a scan of the text (comments, strings,
//! template literals and regular expressions skipped), not by a parse: it
//! runs on every script of a repository, most of which hold no machine.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::import::xstate::modules::Modules;

/// How many re-exports deep a module is followed toward `xstate`.
const MAX_REEXPORT_DEPTH: usize = 16;

/// The module references of a script.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ModuleRefs {
    /// Each specifier (`import … from 'S'`, `import 'S'`, `import('S')`,
    /// `require('S')`, `export … from 'S'`), with whether an `export`
    /// statement names it (a re-export).
    pub specifiers: Vec<(String, bool)>,
    /// Whether the script has an `export { … }` list without `from`, which
    /// may re-export what it imported.
    pub export_list: bool,
    /// Whether the script exports a `setup(...)` of its own (`export const
    /// engine = setup({...})`), which other modules make machines of
    /// (`engine.createMachine(config)`); a machine made on the spot
    /// (`setup({...}).createMachine(...)`) is none.
    pub exports_setup: bool,
}

/// Whether a specifier names XState itself.
fn is_xstate(specifier: &str) -> bool {
    specifier == "xstate" || specifier.starts_with("xstate/") || specifier.starts_with("@xstate/")
}

/// The tokens the scan tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token<'a> {
    Word(&'a str),
    Punct(char),
    Str,
}

/// Reads the module references of a script's text.
pub(crate) fn module_refs(text: &str) -> ModuleRefs {
    let bytes = text.as_bytes();
    let mut refs = ModuleRefs::default();
    // The last two tokens, newest first.
    let mut last: [Option<Token>; 2] = [None, None];
    let mut in_export = false;
    // The brace depth at which an `export {` list opened, and whether one
    // just closed (its `from`, if any, comes next).
    let mut depth = 0usize;
    let mut export_list_at: Option<usize> = None;
    let mut list_closed = false;
    // An exported `= setup` seen (its `(` comes next), the parenthesis
    // depth its call opened at, and whether that call just closed (a `.`
    // next chains `.createMachine` on it).
    let mut setup_next = false;
    let mut setup_at: Option<usize> = None;
    let mut setup_closed = false;
    let mut parens = 0usize;
    let mut i = 0;
    fn push<'a>(last: &mut [Option<Token<'a>>; 2], token: Token<'a>) {
        last[1] = last[0];
        last[0] = Some(token);
    }
    while i < bytes.len() {
        let b = bytes[i];
        let comment = b == b'/' && matches!(bytes.get(i + 1), Some(b'/' | b'*'));
        if !b.is_ascii_whitespace() && !comment {
            if std::mem::take(&mut setup_closed) && b != b'.' {
                refs.exports_setup = true;
            }
            if std::mem::take(&mut setup_next) && b == b'(' {
                setup_at = Some(parens);
            }
        }
        match b {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |n| i + 2 + n + 2);
                continue;
            }
            b'/' if starts_regex(last[0]) => {
                i = skip_regex(bytes, i + 1);
                push(&mut last, Token::Str);
                continue;
            }
            b'\'' | b'"' => {
                let end = skip_string(bytes, i + 1, b);
                let value = &text[i + 1..end.saturating_sub(1).max(i + 1)];
                let specifier = match (last[0], last[1]) {
                    (Some(Token::Word("from")), _) => Some(in_export),
                    (Some(Token::Word("import")), _) => Some(false),
                    (Some(Token::Punct('(')), Some(Token::Word("import" | "require"))) => {
                        Some(false)
                    }
                    _ => None,
                };
                if let Some(reexport) = specifier {
                    refs.specifiers.push((value.to_string(), reexport));
                }
                i = end;
                push(&mut last, Token::Str);
                continue;
            }
            b'`' => {
                i = skip_template(bytes, i + 1);
                push(&mut last, Token::Str);
                continue;
            }
            _ if b.is_ascii_alphabetic() || b == b'_' || b == b'$' => {
                let start = i;
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'$')
                {
                    i += 1;
                }
                let word = &text[start..i];
                if list_closed {
                    list_closed = false;
                    if word != "from" {
                        refs.export_list = true;
                    }
                }
                // A member named like a keyword (`x.from`, `obj.import`) is none.
                if last[0] != Some(Token::Punct('.')) {
                    match word {
                        "export" => in_export = true,
                        "import" => in_export = false,
                        "setup" if in_export && last[0] == Some(Token::Punct('=')) => {
                            setup_next = true;
                        }
                        _ => {}
                    }
                }
                push(&mut last, Token::Word(word));
                continue;
            }
            _ if b.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            _ => {}
        }
        if list_closed && b != b'}' {
            list_closed = false;
            refs.export_list = true;
        }
        match b {
            b'{' => {
                if last[0] == Some(Token::Word("export")) {
                    export_list_at = Some(depth);
                }
                depth += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                if export_list_at == Some(depth) {
                    export_list_at = None;
                    list_closed = true;
                }
            }
            b'(' => parens += 1,
            b')' => {
                parens = parens.saturating_sub(1);
                if setup_at == Some(parens) {
                    setup_at = None;
                    setup_closed = true;
                }
            }
            b';' => in_export = false,
            _ => {}
        }
        // Multi-byte characters are skipped whole.
        let width = text[i..].chars().next().map_or(1, char::len_utf8);
        if b.is_ascii() {
            push(&mut last, Token::Punct(b as char));
        }
        i += width;
    }
    if list_closed {
        refs.export_list = true;
    }
    if setup_closed {
        refs.exports_setup = true;
    }
    refs
}

/// Whether a `/` after `previous` starts a regular expression (else it
/// divides): after an operator, an opening bracket, a comma or a keyword.
fn starts_regex(previous: Option<Token>) -> bool {
    match previous {
        None => true,
        Some(Token::Str) => false,
        Some(Token::Punct(c)) => !matches!(c, ')' | ']' | '}'),
        Some(Token::Word(w)) => matches!(
            w,
            "return"
                | "typeof"
                | "case"
                | "do"
                | "else"
                | "in"
                | "of"
                | "new"
                | "delete"
                | "void"
                | "throw"
                | "yield"
                | "await"
        ),
    }
}

/// The offset after the quote that closes a string opened before `i`.
fn skip_string(bytes: &[u8], mut i: usize, quote: u8) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The offset after the `/` (and flags) that closes a regular expression.
fn skip_regex(bytes: &[u8], mut i: usize) -> usize {
    let mut class = false;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'[' => class = true,
            b']' => class = false,
            b'/' if !class => {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                    i += 1;
                }
                return i;
            }
            b'\n' => return i,
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// The offset after the backtick that closes a template literal opened
/// before `i`, past its `${…}` substitutions (and the templates in them).
fn skip_template(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'`' => return i + 1,
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                i += 2;
                let mut depth = 1;
                while i < bytes.len() && depth > 0 {
                    match bytes[i] {
                        b'{' => depth += 1,
                        b'}' => depth -= 1,
                        b'`' => {
                            i = skip_template(bytes, i + 1);
                            continue;
                        }
                        b'\'' | b'"' => {
                            i = skip_string(bytes, i + 1, bytes[i]);
                            continue;
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Decides which scripts are XState sources, following their imports
/// (relative, tsconfig-mapped, packages of the workspace:
/// `import::xstate::modules`) to the modules that re-export XState. What
/// it learns of a module is kept for the other scripts of the run.
#[derive(Debug, Default)]
pub struct Resolver {
    /// Whether a module re-exports XState, by path (`false` while it is
    /// being decided, so that an import cycle ends).
    provides: HashMap<PathBuf, bool>,
    modules: Modules,
}

impl Resolver {
    /// The module resolver, for the readers of the run's files.
    pub(crate) fn modules(&mut self) -> &mut Modules {
        &mut self.modules
    }

    /// Whether the script at `path`, with text `text`, imports XState,
    /// directly or through a module of the repository that re-exports it.
    pub fn imports_xstate(&mut self, path: &Path, text: &str) -> bool {
        let refs = module_refs(text);
        refs.specifiers.iter().any(|(specifier, _)| {
            is_xstate(specifier)
                || self
                    .resolve(path, specifier)
                    .is_some_and(|module| self.provides_xstate(&module, 0))
        })
    }

    /// Whether the module at `path` provides XState: re-exports it (an
    /// `export … from` of XState or of a module that does, or an `export
    /// { … }` list in a module that imports one of them), or exports a
    /// `setup(...)` of XState that other modules make machines of.
    fn provides_xstate(&mut self, path: &Path, depth: usize) -> bool {
        if let Some(&known) = self.provides.get(path) {
            return known;
        }
        if depth > MAX_REEXPORT_DEPTH {
            return false;
        }
        self.provides.insert(path.to_path_buf(), false);
        let Ok(text) = std::fs::read_to_string(path) else {
            return false;
        };
        let refs = module_refs(&text);
        let provides = refs.specifiers.iter().any(|(specifier, reexport)| {
            (*reexport || refs.export_list || refs.exports_setup)
                && (is_xstate(specifier)
                    || self
                        .resolve(path, specifier)
                        .is_some_and(|module| self.provides_xstate(&module, depth + 1)))
        });
        self.provides.insert(path.to_path_buf(), provides);
        provides
    }

    /// The file a specifier in the script at `from` names; XState itself
    /// names none (it is what is looked for).
    fn resolve(&mut self, from: &Path, specifier: &str) -> Option<PathBuf> {
        if is_xstate(specifier) {
            return None;
        }
        let dir = from.parent().unwrap_or(Path::new("."));
        self.modules.resolve(dir, specifier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specifiers(text: &str) -> Vec<(String, bool)> {
        module_refs(text).specifiers
    }

    #[test]
    fn every_form_of_import_is_read() {
        let text = r#"
import { createMachine } from "xstate";
import type { ActorRefFrom } from '@xstate/react';
import './polyfill';
const lazy = () => import("./lazy");
const { assign } = require('xstate');
export * from "./machines";
export { checkout as default } from './checkout';
"#;
        assert_eq!(
            specifiers(text),
            [
                ("xstate".to_string(), false),
                ("@xstate/react".to_string(), false),
                ("./polyfill".to_string(), false),
                ("./lazy".to_string(), false),
                ("xstate".to_string(), false),
                ("./machines".to_string(), true),
                ("./checkout".to_string(), true),
            ]
        );
        assert!(!module_refs(text).export_list);
    }

    #[test]
    fn comments_strings_templates_and_regexes_are_not_imports() {
        let text = r#"
// import { createMachine } from 'xstate';
/* import { createMachine } from "xstate"; */
const a = "import { createMachine } from 'xstate'";
const b = `from 'xstate' ${x ? `import 'xstate'` : ''}`;
const c = /from 'xstate'/g;
const d = total / 2; const e = from('xstate');
const f = x.from('xstate');
import { createMachine } from '@zag-js/core';
"#;
        assert_eq!(specifiers(text), [("@zag-js/core".to_string(), false)]);
    }

    /// An exported `setup(...)` is what other modules make machines of; a
    /// machine made of one on the spot, or a `setup` of no export, is not.
    #[test]
    fn an_exported_setup_is_told_from_a_machine() {
        for (text, exports) in [
            (
                "export const engine = setup({ actions: { a: () => f(')') } });\n",
                true,
            ),
            (
                "export const engine = setup({})\nexport const x = 1;\n",
                true,
            ),
            ("export const engine = setup({}) // the engine\n", true),
            (
                "export const m = setup({ guards: {} }).createMachine({ id: 'm' });\n",
                false,
            ),
            (
                "export const m = setup({ guards: {} })\n  // made here\n  .createMachine({ id: 'm' });\n",
                false,
            ),
            (
                "const engine = setup({});\nexport const m = engine.createMachine({});\n",
                false,
            ),
            ("export const s = x.setup({});\n", false),
        ] {
            assert_eq!(module_refs(text).exports_setup, exports, "{text}");
        }
    }

    #[test]
    fn an_export_list_may_re_export_what_was_imported() {
        let refs =
            module_refs("import { createMachine } from 'xstate';\nexport { createMachine };\n");
        assert!(refs.export_list);
        assert_eq!(refs.specifiers, [("xstate".to_string(), false)]);
        let from = module_refs("export { createMachine } from 'xstate'\nexport const x = 1;\n");
        assert!(!from.export_list);
        assert_eq!(from.specifiers, [("xstate".to_string(), true)]);
    }

    #[test]
    fn re_exports_are_followed_through_relative_modules_aliases_and_workspace_packages() {
        let root = std::env::temp_dir().join(format!("idemchart-imports-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let files = [
            (
                "package.json",
                r#"{ "name": "shop", "workspaces": ["packages/*", "apps/*"] }"#,
            ),
            (
                "packages/flow/package.json",
                r#"{ "name": "@shop/flow", "main": "dist/index.js" }"#,
            ),
            ("packages/flow/src/index.ts", "export * from './xstate';\n"),
            (
                "packages/flow/src/xstate.ts",
                "export { createMachine, assign } from 'xstate';\n",
            ),
            ("packages/ui/package.json", r#"{ "name": "@shop/ui" }"#),
            (
                "packages/ui/index.ts",
                "export const createMachine = (c: unknown) => c;\n",
            ),
            (
                "apps/web/a.ts",
                "import { createMachine } from '@shop/flow';\n",
            ),
            (
                "apps/web/b.ts",
                "import { createMachine } from '@shop/ui';\n",
            ),
            (
                "apps/web/c.ts",
                "import { createMachine } from '../../packages/flow/src/index.js';\n",
            ),
            ("apps/web/d.ts", "import { createMachine } from './d';\n"),
            (
                "apps/web/tsconfig.json",
                r#"{ "compilerOptions": { "paths": { "@lib/*": ["../../packages/flow/src/*"] } } }"#,
            ),
            (
                "apps/web/e.ts",
                "import { createMachine } from '@lib/xstate';\n",
            ),
            (
                "packages/flow/src/engine.ts",
                "import { setup } from './xstate';\nexport const engine = setup({ actions: {} });\n",
            ),
            (
                "packages/flow/src/order.ts",
                "import { setup } from 'xstate';\nexport const order = setup({}).createMachine({ id: 'o' });\n",
            ),
            (
                "apps/web/f.ts",
                "import { engine } from '@lib/engine';\nexport const m = engine.createMachine(config);\n",
            ),
            (
                "apps/web/g.ts",
                "import { order } from '@lib/order';\nexport const m = createMachine(order.config);\n",
            ),
        ];
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
        }
        let mut resolver = Resolver::default();
        let mut reads = |name: &str| {
            let path = root.join(name);
            let text = std::fs::read_to_string(&path).unwrap();
            resolver.imports_xstate(&path, &text)
        };
        assert!(reads("apps/web/a.ts"));
        assert!(!reads("apps/web/b.ts"));
        assert!(reads("apps/web/c.ts"));
        // A module that imports itself ends.
        assert!(!reads("apps/web/d.ts"));
        // A tsconfig `paths` alias names a module of the repository too.
        assert!(reads("apps/web/e.ts"));
        // A module that exports a `setup(...)` of XState provides it; one
        // that exports a machine does not.
        assert!(reads("apps/web/f.ts"));
        assert!(!reads("apps/web/g.ts"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
