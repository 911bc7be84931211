//! Positions in source text.

use std::hash::{Hash, Hasher};

/// A byte range in one source file.
///
/// Spans say where a thing was written, not what it is, so two spans always
/// compare equal: a machine loaded from YAML equals the same machine loaded from
/// the DSL even though every element sits at another place.
#[derive(Clone, Copy, Debug, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end.max(start) as u32,
        }
    }

    /// The span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

impl PartialEq for Span {
    fn eq(&self, _: &Span) -> bool {
        true
    }
}

impl Eq for Span {}

impl Hash for Span {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

/// A source file: its name, its text, and where its lines start.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub path: String,
    pub text: String,
    line_starts: Vec<u32>,
}

impl Default for SourceFile {
    /// An empty file without a name.
    fn default() -> SourceFile {
        SourceFile::new(String::new(), String::new())
    }
}

impl SourceFile {
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i as u32 + 1));
        SourceFile {
            path: path.into(),
            text,
            line_starts,
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let offset = offset.min(self.text.len() as u32);
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line] as usize;
        let mut end = offset as usize;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let column = self.text[start..end].chars().count() + 1;
        (line + 1, column)
    }

    /// The byte offset where each line starts, the first line's (0) first.
    pub fn line_starts(&self) -> &[u32] {
        &self.line_starts
    }

    /// Byte offset of a 1-based line and column (in characters).
    pub fn offset(&self, line: usize, column: usize) -> u32 {
        let Some(&start) = self.line_starts.get(line.saturating_sub(1)) else {
            return self.text.len() as u32;
        };
        let rest = &self.text[start as usize..];
        let within: usize = rest
            .char_indices()
            .nth(column.saturating_sub(1))
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        start + within as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_round_trips() {
        let file = SourceFile::new("a", "ab\ncñd\n\nx");
        assert_eq!(file.line_col(0), (1, 1));
        assert_eq!(file.line_col(3), (2, 1));
        assert_eq!(file.line_col(6), (2, 3));
        assert_eq!(file.line_col(9), (4, 1));
        for offset in [0, 1, 3, 4, 6, 8, 9] {
            let (line, column) = file.line_col(offset);
            assert_eq!(file.offset(line, column), offset);
        }
    }
}
