//! The files a run reads: those named, and those a directory holds, walked
//! as ripgrep and ruff walk it (the `ignore` crate): past what `.gitignore`,
//! `.git/info/exclude` and `.ignore` files leave out, past hidden files and
//! directories (`.git/`, `.github/`) and `node_modules/`. Which of them hold
//! a machine is [`super::holds_machine`]'s to decide, file by file.

use std::path::{Path, PathBuf};

use super::FileKind;

/// A file a run is to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub path: PathBuf,
    /// Whether the command line named it (else a directory walk found it):
    /// a named file that holds no machine is an error, a found one is
    /// passed over.
    pub named: bool,
}

/// Why a walk could not go on.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {message}", path.display())]
pub struct WalkError {
    pub path: PathBuf,
    pub message: String,
}

/// The files named by `paths`: a file as given (named), a directory walked
/// for the files of a kind the loader reads (`FileKind::of_path`), in sorted
/// order, those that `searches` keeps (the `include` and `exclude` globs of
/// `idemchart.toml`).
pub fn discover(
    paths: &[PathBuf],
    searches: impl Fn(&Path) -> bool,
) -> Result<Vec<Candidate>, WalkError> {
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| WalkError {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if !meta.is_dir() {
            files.push(Candidate {
                path: path.clone(),
                named: true,
            });
            continue;
        }
        let mut found = Vec::new();
        for entry in crate::walk::walker(path).build() {
            let entry = entry.map_err(|e| WalkError {
                path: path.clone(),
                message: e.to_string(),
            })?;
            let is_file = entry.file_type().is_some_and(|t| t.is_file());
            if is_file && FileKind::of_path(entry.path()).is_some() {
                found.push(entry.into_path());
            }
        }
        found.sort();
        files.extend(
            found
                .into_iter()
                .filter(|f| searches(f))
                .map(|path| Candidate { path, named: false }),
        );
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_passes_over_ignored_hidden_and_installed_files() {
        let root = std::env::temp_dir().join(format!("idemchart-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (path, text) in [
            (".gitignore", "dist/\n*.generated.ts\n"),
            ("apps/.ignore", "fixtures/\n"),
            ("apps/web/src/checkout.ts", ""),
            ("apps/web/src/api.generated.ts", ""),
            ("apps/fixtures/m.yaml", ""),
            ("dist/checkout.js", ""),
            ("node_modules/pkg/m.yaml", ""),
            ("packages/a/node_modules/pkg/m.ts", ""),
            (".github/workflows/ci.yml", ""),
            ("machines/order.yaml", ""),
            ("machines/order.chart", ""),
            ("machines/README.md", ""),
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
        }
        let named = root.join("dist/checkout.js");
        let found = discover(&[root.clone(), named.clone()], |p| {
            !p.ends_with("order.chart")
        })
        .unwrap();
        let relative: Vec<(String, bool)> = found
            .iter()
            .map(|c| {
                let path = c.path.strip_prefix(&root).unwrap_or(&c.path);
                (path.display().to_string(), c.named)
            })
            .collect();
        assert_eq!(
            relative,
            [
                ("apps/web/src/checkout.ts".to_string(), false),
                ("machines/order.yaml".to_string(), false),
                // A file named on the command line is read, ignored or not.
                ("dist/checkout.js".to_string(), true),
            ]
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
