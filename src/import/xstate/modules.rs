//! Which file an `import` names: a relative specifier, or one that the
//! nearest `tsconfig.json` maps through `compilerOptions.paths` or
//! `baseUrl`, as TypeScript resolves them.
//!
//! A package import that no tsconfig maps (`xstate`, `lodash`) names no
//! file here: idemchart reads the repository, not `node_modules`.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use oxc_allocator::Allocator;
use oxc_ast::ast::*;
use oxc_span::SourceType;

/// How many `extends` a tsconfig chain may have: far beyond a real one,
/// and an end to a cycle.
const MAX_EXTENDS: usize = 16;

/// What one `tsconfig.json` (with what it extends) says about module names.
#[derive(Clone, Debug, Default)]
pub(super) struct TsPaths {
    /// `baseUrl`, made absolute against the file that sets it.
    base_url: Option<PathBuf>,
    /// `paths`: pattern → substitutions, and the directory they are
    /// relative to (`baseUrl`, else the tsconfig that sets `paths`).
    paths: Vec<(String, Vec<String>)>,
    paths_base: PathBuf,
}

/// The tsconfig settings found for each directory, so that a directory
/// search reads each tsconfig once per load.
#[derive(Default)]
pub(super) struct TsConfigs {
    by_dir: HashMap<PathBuf, Option<TsPaths>>,
}

impl TsConfigs {
    /// The settings of the tsconfig.json nearest above `dir`.
    fn nearest(&mut self, dir: &Path) -> Option<TsPaths> {
        if let Some(known) = self.by_dir.get(dir) {
            return known.clone();
        }
        let own = dir.join("tsconfig.json");
        let found = if own.is_file() {
            read_chain(&own)
        } else {
            dir.parent().and_then(|parent| self.nearest(parent))
        };
        self.by_dir.insert(dir.to_path_buf(), found.clone());
        found
    }

    /// The file a module specifier names from a file in `dir`.
    pub fn resolve(&mut self, dir: &Path, source: &str) -> Option<PathBuf> {
        if source.starts_with('.') {
            return module_path(&lexically_clean(&dir.join(source)));
        }
        let config = self.nearest(dir)?;
        // An exact pattern wins; among wildcard ones, the longest prefix.
        let mut best: Option<(usize, &str, &Vec<String>)> = None;
        for (pattern, targets) in &config.paths {
            match pattern.split_once('*') {
                None if pattern == source => {
                    best = Some((usize::MAX, "", targets));
                    break;
                }
                Some((prefix, suffix))
                    if source.len() >= prefix.len() + suffix.len()
                        && source.starts_with(prefix)
                        && source.ends_with(suffix)
                        && best.is_none_or(|(len, _, _)| prefix.len() > len) =>
                {
                    let star = &source[prefix.len()..source.len() - suffix.len()];
                    best = Some((prefix.len(), star, targets));
                }
                _ => {}
            }
        }
        if let Some((_, star, targets)) = best {
            for target in targets {
                let path = config.paths_base.join(target.replacen('*', star, 1));
                if let Some(found) = module_path(&lexically_clean(&path)) {
                    return Some(found);
                }
            }
        }
        let base = config.base_url.as_ref()?;
        module_path(&lexically_clean(&base.join(source)))
    }
}

/// A tsconfig and the relative files it `extends`, the nearer one's
/// settings winning.
fn read_chain(file: &Path) -> Option<TsPaths> {
    let mut chain = Vec::new();
    let mut next = Some(file.to_path_buf());
    while let Some(path) = next.take() {
        if chain.len() >= MAX_EXTENDS || chain.iter().any(|(p, _)| p == &path) {
            break;
        }
        let Some(options) = read_options(&path) else {
            break;
        };
        next = options.extends.as_ref().and_then(|e| {
            let dir = path.parent()?;
            let target = dir.join(e);
            // `extends: "./base"` may leave out `.json`.
            let with_json = PathBuf::from(format!("{}.json", target.display()));
            [target, with_json].into_iter().find(|p| p.is_file())
        });
        chain.push((path, options));
    }
    let mut out = TsPaths::default();
    let mut paths_from: Option<PathBuf> = None;
    // From the farthest base to the file itself, each overriding.
    for (path, options) in chain.into_iter().rev() {
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if let Some(base) = options.base_url {
            out.base_url = Some(lexically_clean(&dir.join(base)));
        }
        if let Some(paths) = options.paths {
            out.paths = paths;
            paths_from = Some(dir);
        }
    }
    if out.paths.is_empty() && out.base_url.is_none() {
        return None;
    }
    out.paths_base = out.base_url.clone().or(paths_from).unwrap_or_default();
    Some(out)
}

/// What one tsconfig file sets.
struct Options {
    extends: Option<String>,
    base_url: Option<String>,
    paths: Option<Vec<(String, Vec<String>)>>,
}

/// `extends`, `compilerOptions.baseUrl` and `compilerOptions.paths` of a
/// tsconfig file, which is JSON with comments and trailing commas: read
/// as a JavaScript expression, which allows both.
fn read_options(path: &Path) -> Option<Options> {
    let text = std::fs::read_to_string(path).ok()?;
    let allocator = Allocator::default();
    let expr = oxc_parser::Parser::new(&allocator, &text, SourceType::mjs())
        .parse_expression()
        .ok()?;
    let string = |e: &Expression| match e.get_inner_expression() {
        Expression::StringLiteral(s) => Some(s.value.to_string()),
        _ => None,
    };
    let extends = super::scope::property(&expr, "extends").and_then(string);
    let options = super::scope::property(&expr, "compilerOptions");
    let base_url = options
        .and_then(|o| super::scope::property(o, "baseUrl"))
        .and_then(string);
    let paths = options
        .and_then(|o| super::scope::property(o, "paths"))
        .and_then(|p| match p.get_inner_expression() {
            Expression::ObjectExpression(o) => Some(o),
            _ => None,
        })
        .map(|o| {
            o.properties
                .iter()
                .filter_map(|p| p.as_property())
                .filter_map(|p| {
                    let key = match &p.key {
                        PropertyKey::StringLiteral(s) => s.value.to_string(),
                        other => other.static_name()?.to_string(),
                    };
                    let Expression::ArrayExpression(list) = p.value.get_inner_expression() else {
                        return None;
                    };
                    let targets = list
                        .elements
                        .iter()
                        .filter_map(|e| e.as_expression().and_then(string))
                        .collect();
                    Some((key, targets))
                })
                .collect()
        });
    Some(Options {
        extends,
        base_url,
        paths,
    })
}

/// `a/./b/../c` as `a/c`, so that a module is named as a person would.
pub(super) fn lexically_clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The file a module specifier names: as written if it exists, else with
/// one of the script extensions (also in place of a `.js` that
/// TypeScript's ESM style writes for a `.ts` file), else its `index`.
pub(super) fn module_path(base: &Path) -> Option<PathBuf> {
    const EXTENSIONS: [&str; 8] = ["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"];
    if base.is_file() {
        return Some(base.to_path_buf());
    }
    let mut candidates = Vec::new();
    let text = base.to_string_lossy();
    if let Some(stem) = text.strip_suffix(".js") {
        candidates.push(PathBuf::from(format!("{stem}.ts")));
        candidates.push(PathBuf::from(format!("{stem}.tsx")));
    }
    for ext in EXTENSIONS {
        candidates.push(PathBuf::from(format!("{text}.{ext}")));
    }
    for ext in EXTENSIONS {
        candidates.push(base.join(format!("index.{ext}")));
    }
    candidates.into_iter().find(|c| c.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with a base tsconfig, a package's tsconfig extending
    /// it, and modules the aliases name.
    #[test]
    fn paths_and_base_url_name_files_through_extends() {
        let root = std::env::temp_dir().join(format!("idemchart-tspaths-{}", std::process::id()));
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("dir");
            std::fs::write(path, text).expect("write");
        };
        write(
            "tsconfig.base.json",
            "{\n  // shared\n  \"compilerOptions\": { \"baseUrl\": \".\", \"paths\": {\n    \"@flow\": [\"packages/flow/src\"],\n    \"@flow/*\": [\"packages/flow/src/*\"],\n  } },\n}\n",
        );
        write("app/tsconfig.json", "{ \"extends\": \"../tsconfig.base\" }");
        write("packages/flow/src/index.ts", "export * from './states';");
        write("packages/flow/src/states.ts", "export const a = {};");
        write("lib/util.ts", "export const b = 1;");
        write("app/src/main.ts", "");
        let mut configs = TsConfigs::default();
        let dir = root.join("app/src");
        assert_eq!(
            configs.resolve(&dir, "@flow"),
            Some(root.join("packages/flow/src/index.ts"))
        );
        assert_eq!(
            configs.resolve(&dir, "@flow/states"),
            Some(root.join("packages/flow/src/states.ts"))
        );
        assert_eq!(
            configs.resolve(&dir, "lib/util"),
            Some(root.join("lib/util.ts"))
        );
        assert_eq!(configs.resolve(&dir, "xstate"), None);
        assert_eq!(
            configs.resolve(&dir, "./main"),
            Some(root.join("app/src/main.ts"))
        );
        std::fs::remove_dir_all(&root).ok();
    }
}
