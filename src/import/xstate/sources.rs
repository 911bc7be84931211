//! The files one XState machine is read from, and where their text sits in
//! the one offset space that spans use.
//!
//! A machine may be spread over a file and the sibling modules it imports.
//! The model keeps a span as two byte offsets without a file, so every file
//! gets its own range of offsets: the main file starts at 0, each imported
//! module after the end of the one before. `Sources::split` turns a list of
//! diagnostics back into one list per file, with offsets into that file.

use crate::diagnostic::Diagnostic;
use crate::span::{SourceFile, Span};

/// The files of one load, each at its base offset.
#[derive(Clone, Debug)]
pub struct Sources {
    files: Vec<(u32, SourceFile)>,
}

impl Sources {
    pub fn new(main: SourceFile) -> Sources {
        Sources {
            files: vec![(0, main)],
        }
    }

    /// The file every load starts from.
    pub fn main(&self) -> &SourceFile {
        &self.files[0].1
    }

    /// Every file, the main one first.
    pub fn files(&self) -> impl Iterator<Item = &SourceFile> {
        self.files.iter().map(|(_, f)| f)
    }

    /// Adds a file after the others; its base offset.
    pub(super) fn add(&mut self, file: SourceFile) -> u32 {
        let (base, last) = self.files.last().expect("the main file is always there");
        // One byte of room past the end, so that an empty span at the end of
        // one file is not taken for the start of the next.
        let base = base + last.text.len() as u32 + 1;
        self.files.push((base, file));
        base
    }

    /// The file that holds `offset`, and the offset in it.
    fn locate(&self, offset: u32) -> (usize, u32) {
        let index = self
            .files
            .partition_point(|(base, _)| *base <= offset)
            .saturating_sub(1);
        (index, offset - self.files[index].0)
    }

    /// The diagnostics sorted out by file, each file once, in the order the
    /// files were read; spans and labels become offsets into their file. A
    /// label in another file than its diagnostic cannot be shown beside it,
    /// so it is named in the message instead.
    pub fn split(&self, diagnostics: Vec<Diagnostic>) -> Vec<(SourceFile, Vec<Diagnostic>)> {
        let mut by_file: Vec<Vec<Diagnostic>> = vec![Vec::new(); self.files.len()];
        for mut d in diagnostics {
            let (file, start) = self.locate(d.span.start);
            let end = d.span.end.saturating_sub(self.files[file].0).max(start);
            d.span = Span {
                start,
                end: end.min(self.files[file].1.text.len() as u32),
            };
            let mut labels = Vec::new();
            for mut label in std::mem::take(&mut d.labels) {
                let (at, start) = self.locate(label.span.start);
                if at == file {
                    let end = label.span.end.saturating_sub(self.files[at].0).max(start);
                    label.span = Span { start, end };
                    labels.push(label);
                } else {
                    let other = &self.files[at].1;
                    let (line, column) = other.line_col(start);
                    d.message.push_str(&format!(
                        " ({}:{line}:{column}: {})",
                        other.path, label.message
                    ));
                }
            }
            d.labels = labels;
            by_file[file].push(d);
        }
        self.files
            .iter()
            .zip(by_file)
            .filter(|((base, _), found)| *base == 0 || !found.is_empty())
            .map(|((_, file), found)| (file.clone(), found))
            .collect()
    }
}

/// Where the text a parser saw lies in the offset space: at a base, or,
/// for the code of a JSON string (`"@code": "..."`), through a table from
/// each byte of the unescaped text to the byte of the file that wrote it.
#[derive(Clone, Debug)]
pub(super) enum Mapping {
    Base(u32),
    Table(Vec<u32>),
}

impl Mapping {
    pub fn offset(&self, at: u32) -> u32 {
        match self {
            Mapping::Base(base) => base + at,
            Mapping::Table(table) => table
                .get(at as usize)
                .or(table.last())
                .copied()
                .unwrap_or_default(),
        }
    }

    pub fn span(&self, span: oxc_span::Span) -> Span {
        let start = self.offset(span.start);
        let end = self.offset(span.end).max(start);
        Span { start, end }
    }
}

/// The unescaped text of the JSON string literal `raw` (quotes included)
/// that starts at `base`, and for each of its bytes (and one past the end)
/// the offset of the byte that wrote it; `None` for an escape that JSON does
/// not have.
pub(super) fn unescape_json(raw: &str, base: u32) -> Option<(String, Vec<u32>)> {
    let body = raw.strip_prefix('"')?.strip_suffix('"')?;
    let mut text = String::with_capacity(body.len());
    let mut table = Vec::with_capacity(body.len() + 1);
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let at = base + 1 + i as u32;
        let decoded = if c == '\\' {
            let (_, escape) = chars.next()?;
            match escape {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                'b' => '\u{8}',
                'f' => '\u{c}',
                '/' => '/',
                '\\' => '\\',
                '"' => '"',
                'u' => {
                    let mut code = String::new();
                    for _ in 0..4 {
                        code.push(chars.next()?.1);
                    }
                    let unit = u32::from_str_radix(&code, 16).ok()?;
                    char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER)
                }
                _ => return None,
            }
        } else {
            c
        };
        for _ in 0..decoded.len_utf8() {
            table.push(at);
        }
        text.push(decoded);
    }
    table.push(base + raw.len() as u32 - 1);
    Some((text, table))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::LoadError;

    #[test]
    fn json_strings_map_back_to_the_bytes_that_wrote_them() {
        let raw = r#""a\nb\"c""#;
        let (text, table) = unescape_json(raw, 10).unwrap();
        assert_eq!(text, "a\nb\"c");
        // `a` at 11, `\n` written at 12, `b` at 14, `"` at 15, `c` at 17.
        assert_eq!(table, vec![11, 12, 14, 15, 17, 18]);
        assert!(unescape_json(r#""\q""#, 0).is_none());
    }

    #[test]
    fn diagnostics_are_split_by_file() {
        let mut sources = Sources::new(SourceFile::new("main.ts", "0123456789"));
        let base = sources.add(SourceFile::new("stage.ts", "abcdef"));
        assert_eq!(base, 11);
        let at = |start: u32| {
            LoadError::Syntax {
                message: "m".into(),
            }
            .at(
                Span {
                    start,
                    end: start + 2,
                },
                [],
            )
        };
        let split = sources.split(vec![at(3), at(base + 2)]);
        assert_eq!(split.len(), 2);
        assert_eq!(split[0].1[0].span.start, 3);
        assert_eq!(split[1].0.path, "stage.ts");
        assert_eq!(split[1].1[0].span.start, 2);
        assert_eq!(split[1].1[0].span.end, 4);
    }
}
