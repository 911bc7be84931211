//! The old version of a machine that `lint --baseline` and `diff` compare
//! a file with: another file, or the same file at a git revision, read
//! with `git show REV:./NAME` run in the file's directory (so in the file's
//! own repository, wherever the command runs).

use std::path::{Path, PathBuf};
use std::process::Command;

use idemchart::{Machine, SourceFile};

/// Where the old version is.
pub enum Baseline {
    /// A machine file.
    File(PathBuf),
    /// A git revision (`HEAD~1`, a tag, a commit), at which each file is
    /// read at its own path.
    Revision(String),
}

impl Baseline {
    /// A path that names a file is that file; anything else is a revision.
    pub fn parse(text: &str) -> Baseline {
        let path = PathBuf::from(text);
        if path.is_file() {
            Baseline::File(path)
        } else {
            Baseline::Revision(text.to_string())
        }
    }

    /// The old version of the machine file at `path`: `None` when the file
    /// did not exist at the revision (a new machine has no stored
    /// processes); an error when git cannot say, or the old text does not
    /// load (with each load error at its file:line:col).
    pub fn machine_for(&self, path: &Path) -> Result<Option<Machine>, String> {
        let Some(file) = self.read(path)? else {
            return Ok(None);
        };
        load(&file).map(Some)
    }

    fn read(&self, path: &Path) -> Result<Option<SourceFile>, String> {
        match self {
            Baseline::File(old) => {
                let text = std::fs::read_to_string(old)
                    .map_err(|e| format!("cannot read the baseline {}: {e}", old.display()))?;
                Ok(Some(SourceFile::new(old.display().to_string(), text)))
            }
            Baseline::Revision(revision) => git_show(revision, path),
        }
    }
}

/// The text of `path` at `revision`, by `git show`, in the file's own
/// directory; `None` when git says the path did not exist there.
fn git_show(revision: &str, path: &Path) -> Result<Option<SourceFile>, String> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| format!("--baseline {revision}: {} names no file", path.display()))?;
    let spec = format!("{revision}:./{}", name.to_string_lossy());
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["show", "--no-textconv", &spec])
        .output()
        .map_err(|e| format!("--baseline {revision}: cannot run git: {e}"))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr).trim().to_string();
        // The path is new since the revision: nothing was stored under it.
        if said.contains("exists on disk, but not in") || said.contains("does not exist in") {
            return Ok(None);
        }
        return Err(format!(
            "--baseline {revision}: `git show {spec}` in {} failed: {said}",
            dir.display()
        ));
    }
    let text = String::from_utf8(output.stdout).map_err(|_| {
        format!(
            "--baseline {revision}: {} at {revision} is not UTF-8",
            path.display()
        )
    })?;
    // Named as git names it, with the file's own extension, so that the
    // loader picks the same syntax and messages say which version it is.
    Ok(Some(SourceFile::new(
        format!("{revision}:{}", path.display()),
        text,
    )))
}

/// The one machine of the old file, or its load errors rendered, each at
/// its file:line:col.
fn load(file: &SourceFile) -> Result<Machine, String> {
    idemchart::load::load(file).map_err(|errors| {
        let rendered: Vec<String> = errors
            .iter()
            .map(|d| idemchart::report::render(d, file, false))
            .collect();
        format!(
            "the baseline {} does not load:\n{}",
            file.path,
            rendered.join("\n\n")
        )
    })
}
