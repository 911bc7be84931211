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
    memo: Memo,
}

/// What a front-end derived from the file's text, kept for whoever reads
/// the same text again: the YAML loader keeps its node tree here, which
/// the fix editor reads instead of parsing the file a second time. Clones
/// of the file share it.
#[derive(Clone, Debug, Default)]
struct Memo(std::sync::Arc<std::sync::Mutex<Option<Derived>>>);

type Derived = std::sync::Arc<dyn std::any::Any + Send + Sync>;

impl Memo {
    fn kept(&self) -> Option<Derived> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
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
            memo: Memo::default(),
        }
    }

    /// The value `make` derives from the text, made once per file (and its
    /// clones) and kept: a second reader of the text gets the first one's.
    /// A file keeps one such value; asked for another type, `make` runs and
    /// its value is not kept.
    pub fn derived<T: std::any::Any + Send + Sync>(
        &self,
        make: impl FnOnce(&SourceFile) -> T,
    ) -> std::sync::Arc<T> {
        if let Some(kept) = self.memo.kept() {
            return match kept.downcast::<T>() {
                Ok(value) => value,
                Err(_) => std::sync::Arc::new(make(self)),
            };
        }
        // Made without the lock held: `make` may read the file's memo too.
        let value = std::sync::Arc::new(make(self));
        let mut slot = self.memo.0.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(value.clone());
        }
        value
    }

    /// Lets go of what was derived from the text, for this file and its
    /// clones: whoever holds it keeps it, and the next reader derives it
    /// again. The lint calls it once its fixes are made, so that the YAML
    /// node tree of a large file (many times the file's size) is not held
    /// through the replays.
    pub fn release_derived(&self) {
        self.memo.0.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// The file without what was derived from it: for a file kept long
    /// after it was read (an editor's open document).
    pub fn forget_derived(&mut self) {
        self.memo = Memo::default();
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
    fn what_is_derived_from_a_file_is_made_once_and_shared_by_its_clones() {
        let mut file = SourceFile::new("a", "abc");
        let made = std::cell::Cell::new(0);
        let length = |f: &SourceFile| {
            made.set(made.get() + 1);
            f.text.len()
        };
        assert_eq!(*file.derived(length), 3);
        let clone = file.clone();
        assert_eq!(*clone.derived(length), 3);
        assert_eq!(made.get(), 1);
        // Another type is made each time, and does not replace the first.
        assert_eq!(*file.derived(|f| f.text.clone()), "abc");
        assert_eq!(*file.derived(|f| f.text.clone()), "abc");
        assert_eq!(*file.derived(length), 3);
        assert_eq!(made.get(), 1);
        file.forget_derived();
        assert_eq!(*file.derived(length), 3);
        assert_eq!(made.get(), 2);
    }

    #[test]
    fn a_released_value_lives_while_held_and_is_made_again_for_the_next_reader() {
        let file = SourceFile::new("a", "abc");
        let clone = file.clone();
        let held = file.derived(|f| f.text.len());
        assert_eq!(std::sync::Arc::strong_count(&held), 2);
        // Released through a clone: the memo the clones share lets go.
        clone.release_derived();
        assert_eq!(std::sync::Arc::strong_count(&held), 1);
        assert_eq!(*held, 3);
        let again = file.derived(|f| f.text.len() + 1);
        assert_eq!(*again, 4);
        assert_eq!(*clone.derived(|_| 0usize), 4);
    }

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
