//! Which file an `import` names: a relative specifier, one that the
//! nearest `tsconfig.json` maps through `compilerOptions.paths` or
//! `baseUrl`, as TypeScript resolves them, or a package of the workspace
//! (a `pnpm-workspace.yaml`, or a `package.json` with `workspaces`). The
//! one resolver of module names: the XState reader follows imports with
//! it, and the loader asks it whether a script reaches XState.
//!
//! A package import that neither maps (`xstate`, `lodash`) names no file
//! here: idemchart reads the repository, not `node_modules`.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use oxc_allocator::Allocator;
use oxc_ast::ast::*;
use oxc_span::SourceType;

use super::SCRIPT_EXTENSIONS;

/// How many `extends` a tsconfig chain may have: far beyond a real one,
/// and an end to a cycle.
const MAX_EXTENDS: usize = 16;

/// How deep under a workspace's root its packages are looked for.
const MAX_PACKAGE_DEPTH: usize = 4;

/// What one `tsconfig.json` (with what it extends) says about module names.
#[derive(Clone, Debug, Default)]
struct TsPaths {
    /// `baseUrl`, made absolute against the file that sets it.
    base_url: Option<PathBuf>,
    /// `paths`: pattern → substitutions, and the directory they are
    /// relative to (`baseUrl`, else the tsconfig that sets `paths`).
    paths: Vec<(String, Vec<String>)>,
    paths_base: PathBuf,
}

/// The packages of one workspace: each package's name and directory.
#[derive(Debug, Default)]
struct Workspace {
    packages: HashMap<String, PathBuf>,
}

/// The resolver, with what it has read (tsconfig settings by directory,
/// workspaces by root), so that a run reads each file of them once.
#[derive(Debug, Default)]
pub(crate) struct Modules {
    tsconfigs: HashMap<PathBuf, Option<TsPaths>>,
    /// The root of the workspace a directory is in, by directory.
    roots: HashMap<PathBuf, Option<PathBuf>>,
    /// The packages of a workspace, by its root.
    workspaces: HashMap<PathBuf, Rc<Workspace>>,
}

impl Modules {
    /// The file a module specifier names from a file in `dir`.
    pub(crate) fn resolve(&mut self, dir: &Path, source: &str) -> Option<PathBuf> {
        if source.starts_with('.') {
            return module_path(&lexically_clean(&dir.join(source)));
        }
        self.through_tsconfig(dir, source)
            .or_else(|| self.in_workspace(dir, source))
    }

    /// The settings of the tsconfig.json nearest above `dir`.
    fn nearest(&mut self, dir: &Path) -> Option<TsPaths> {
        if let Some(known) = self.tsconfigs.get(dir) {
            return known.clone();
        }
        let own = dir.join("tsconfig.json");
        let found = if own.is_file() {
            read_chain(&own)
        } else {
            dir.parent().and_then(|parent| self.nearest(parent))
        };
        self.tsconfigs.insert(dir.to_path_buf(), found.clone());
        found
    }

    /// The file the nearest tsconfig's `paths` or `baseUrl` maps `source` to.
    fn through_tsconfig(&mut self, dir: &Path, source: &str) -> Option<PathBuf> {
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

    /// The file a package of the workspace `dir` is in names: its entry, or
    /// a path inside it. Installed packages are not followed.
    fn in_workspace(&mut self, dir: &Path, source: &str) -> Option<PathBuf> {
        if source.starts_with('/') {
            return None;
        }
        let workspace = self.workspace(dir)?;
        let (name, rest) = package_name(source)?;
        let package = workspace.packages.get(name)?;
        let found = match rest {
            Some(rest) => module_path(&package.join(rest))
                .or_else(|| module_path(&package.join("src").join(rest))),
            None => package_entry(package),
        }?;
        // The root was found from the absolute directory; a run given
        // relative paths names the module relative to where it runs too.
        Some(match std::env::current_dir() {
            Ok(here) if dir.is_relative() => found
                .strip_prefix(&here)
                .map(Path::to_path_buf)
                .unwrap_or(found),
            _ => found,
        })
    }

    /// The workspace `dir` is in, if any.
    fn workspace(&mut self, dir: &Path) -> Option<Rc<Workspace>> {
        let root = self
            .roots
            .entry(dir.to_path_buf())
            .or_insert_with(|| {
                // A relative directory is made absolute, so that a run
                // inside a package still finds the workspace above it.
                std::path::absolute(dir)
                    .ok()?
                    .ancestors()
                    .find(|d| is_workspace_root(d))
                    .map(Path::to_path_buf)
            })
            .clone()?;
        Some(
            self.workspaces
                .entry(root.clone())
                .or_insert_with(|| Rc::new(Workspace::read(&root)))
                .clone(),
        )
    }
}

/// Whether `dir` is the root of a workspace of packages.
fn is_workspace_root(dir: &Path) -> bool {
    dir.join("pnpm-workspace.yaml").is_file()
        || std::fs::read_to_string(dir.join("package.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .is_some_and(|json| json.get("workspaces").is_some())
}

impl Workspace {
    /// The named packages under `root`, past what `.gitignore` and
    /// `node_modules/` hold.
    fn read(root: &Path) -> Workspace {
        let mut packages = HashMap::new();
        let walk = crate::walk::walker(root)
            .max_depth(Some(MAX_PACKAGE_DEPTH))
            .build();
        for entry in walk.flatten() {
            if entry.file_name() != "package.json" {
                continue;
            }
            let name = std::fs::read_to_string(entry.path())
                .ok()
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                .and_then(|json| json.get("name")?.as_str().map(str::to_string));
            if let (Some(name), Some(dir)) = (name, entry.path().parent()) {
                packages.entry(name).or_insert_with(|| dir.to_path_buf());
            }
        }
        Workspace { packages }
    }
}

/// A bare specifier's package name (`@scope/name` or `name`) and the path
/// inside the package, if any.
fn package_name(specifier: &str) -> Option<(&str, Option<&str>)> {
    let mut parts = specifier.splitn(3, '/');
    let first = parts.next()?;
    let (name_end, rest) = if first.starts_with('@') {
        let second = parts.next()?;
        (first.len() + 1 + second.len(), parts.next())
    } else {
        (first.len(), specifier.get(first.len() + 1..))
    };
    Some((&specifier[..name_end], rest.filter(|r| !r.is_empty())))
}

/// The module a package's `package.json` names as its entry (`exports`,
/// `module`, `main`, `types`), else its `src/index` or `index`.
fn package_entry(package: &Path) -> Option<PathBuf> {
    let json = std::fs::read_to_string(package.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .unwrap_or_default();
    let exports = json.get("exports").and_then(|e| match e.get(".") {
        Some(dot) => first_string(dot),
        None => first_string(e),
    });
    exports
        .into_iter()
        .chain(
            ["module", "main", "types"]
                .into_iter()
                .filter_map(|key| json.get(key)?.as_str().map(str::to_string)),
        )
        .chain(["src/index".to_string(), "index".to_string()])
        .find_map(|entry| module_path(&package.join(entry)))
}

/// The first string of an `exports` entry: the string itself, or the first
/// of its conditions (`import`, `default`, …).
fn first_string(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Object(conditions) => conditions.values().find_map(first_string),
        _ => None,
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
fn lexically_clean(path: &Path) -> PathBuf {
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
/// one of the script extensions (also in place of the `.js`, `.mjs`, …
/// that TypeScript's ESM style writes for a `.ts` file), or as a
/// declaration file (`.d.ts`, where an import of types may lead), else
/// its directory's `index`.
pub(crate) fn module_path(base: &Path) -> Option<PathBuf> {
    if base.is_file() {
        return Some(base.to_path_buf());
    }
    let stem = match base.extension().and_then(|e| e.to_str()) {
        Some(e) if SCRIPT_EXTENSIONS.contains(&e) => base.with_extension(""),
        _ => base.to_path_buf(),
    };
    let with = |base: &Path, ext: &str| {
        let mut name = base.as_os_str().to_owned();
        name.push(".");
        name.push(ext);
        PathBuf::from(name)
    };
    let extensions = || SCRIPT_EXTENSIONS.iter().chain(&["d.ts"]);
    extensions()
        .map(|ext| with(&stem, ext))
        .chain(extensions().map(|ext| with(&base.join("index"), ext)))
        .find(|candidate| candidate.is_file())
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
        let mut configs = Modules::default();
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

    #[test]
    fn package_names_split_from_their_paths() {
        assert_eq!(
            package_name("@payments/flow"),
            Some(("@payments/flow", None))
        );
        assert_eq!(
            package_name("@payments/flow/states"),
            Some(("@payments/flow", Some("states")))
        );
        assert_eq!(package_name("lodash/fp"), Some(("lodash", Some("fp"))));
        assert_eq!(package_name("react"), Some(("react", None)));
    }
}
