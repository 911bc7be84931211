//! Machine files on disk: reading them as text, and loading them with errors
//! that carry the file's name and each problem's line and column.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::diagnostic::{Diagnostic, LoadError};
use crate::model::Machine;
use crate::span::{SourceFile, Span};

/// Why a machine file did not load.
#[derive(Debug, thiserror::Error)]
pub enum LoadFileError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file was read, and is wrong at the places its diagnostics name.
    #[error("{}", Located(file, diagnostics))]
    Invalid {
        file: SourceFile,
        diagnostics: Vec<Diagnostic>,
    },
}

/// Reads a machine file as text. Bytes that are not UTF-8 are an error in
/// the file, at the first such byte, not a failure to read it: the text
/// given with that error shows each bad byte as U+FFFD, so the error can be
/// shown in context like any other.
pub fn read(path: &Path) -> std::io::Result<Result<SourceFile, (SourceFile, Diagnostic)>> {
    let bytes = std::fs::read(path)?;
    let name = path.display().to_string();
    Ok(match String::from_utf8(bytes) {
        Ok(text) => Ok(SourceFile::new(name, text)),
        Err(error) => {
            let at = error.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(error.as_bytes()).into_owned();
            let mut diagnostic = LoadError::Syntax {
                message: "the file is not UTF-8 text".into(),
            }
            .at(
                Span::new(at, at + char::REPLACEMENT_CHARACTER.len_utf8()),
                [],
            );
            diagnostic.help = Some("save the file with the UTF-8 encoding".into());
            Err((SourceFile::new(name, text), diagnostic))
        }
    })
}

/// Reads and loads a machine file (`*.yaml`, `*.yml` or `*.chart`, or an
/// XState source that holds one machine).
///
/// ```
/// let path = std::env::temp_dir().join(format!("door-{}.yaml", std::process::id()));
/// std::fs::write(&path, "machine: door\ninitial: closed\nstates:\n  closed: { on: { OPEN: opend } }\n  opened: {}\n")?;
/// let error = idemchart::load::load_path(&path).unwrap_err();
/// // Every problem, each with the file's name, its line and its column.
/// assert!(error.to_string().ends_with(
///     ":4:25: error[S001] unknown-target: unknown target `opend` (help: did you mean `opened`?)"
/// ));
///
/// std::fs::write(&path, "machine: door\ninitial: closed\nstates:\n  closed: { on: { OPEN: opened } }\n  opened: {}\n")?;
/// let machine = idemchart::load::load_path(&path)?;
/// assert_eq!(machine.name, "door");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_path(path: impl AsRef<Path>) -> Result<Machine, LoadFileError> {
    let path = path.as_ref();
    let (file, loaded) = load_file(path).map_err(|source| LoadFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    loaded.map_err(|diagnostics| LoadFileError::Invalid { file, diagnostics })
}

/// Reads and loads one machine file: the file, to show diagnostics in, and
/// the machine or every problem in it. Bytes that are not UTF-8 are a
/// problem in the file like any other; only a file that cannot be read at
/// all is an I/O error.
pub fn load_file(path: &Path) -> std::io::Result<(SourceFile, Result<Machine, Vec<Diagnostic>>)> {
    Ok(match read(path)? {
        Ok(file) => {
            let loaded = super::load(&file);
            (file, loaded)
        }
        Err((file, not_utf8)) => (file, Err(vec![not_utf8])),
    })
}

/// One line per diagnostic: `PATH:LINE:COL: SEVERITY[CODE] NAME: MESSAGE (help: HELP)`.
struct Located<'a>(&'a SourceFile, &'a [Diagnostic]);

impl fmt::Display for Located<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Located(file, diagnostics) = self;
        for (i, d) in diagnostics.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            let (line, column) = file.line_col(d.span.start);
            write!(
                f,
                "{}:{line}:{column}: {}[{}] {}: {}",
                file.path,
                d.severity.as_str(),
                d.code,
                d.name,
                d.message
            )?;
            if let Some(help) = &d.help {
                write!(f, " (help: {help})")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("idemchart-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    }

    #[test]
    fn a_missing_file_names_its_path() {
        let error = load_path("/nonexistent/idemchart/m.yaml").unwrap_err();
        assert!(matches!(error, LoadFileError::Io { .. }));
        assert!(
            error
                .to_string()
                .starts_with("cannot read /nonexistent/idemchart/m.yaml: ")
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_are_an_error_at_their_line_and_column() {
        let path = temp(
            "latin1.yaml",
            b"machine: m\ninitial: a\n# caf\xe9\nstates: { a: {} }\n",
        );
        let error = load_path(&path).unwrap_err();
        let LoadFileError::Invalid { diagnostics, .. } = &error else {
            panic!("{error:?}");
        };
        assert_eq!(diagnostics.len(), 1);
        assert!(
            error.to_string().ends_with(
                "latin1.yaml:3:6: error[E001] syntax-error: the file is not UTF-8 text (help: save the file with the UTF-8 encoding)"
            ),
            "{error}"
        );
    }

    #[test]
    fn every_problem_is_one_line() {
        let path = temp(
            "two.chart",
            b"machine m\ninitial a\nstate a {\n  on GO -> nowhere\n  on STOP -> elsewhere\n}\n",
        );
        let error = load_path(&path).unwrap_err();
        assert_eq!(error.to_string().lines().count(), 2, "{error}");
    }
}
