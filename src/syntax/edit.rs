//! What a fix editor of any syntax offers ([`Editor`]), and the line
//! helpers the editors share: the YAML and DSL editors (`yaml::edit`,
//! `dsl::edit`) and the XState one (`import::xstate::edit`) implement it;
//! the lints ask it where and how to write what their fix changes.

use crate::diagnostic::Edit;
use crate::span::Span;

/// The edits a fix is made of, written in one syntax. Each anchor is a span
/// the model keeps (a name, a key, a transition); `None` when the text is
/// not shaped as the editor can change safely (an alias, a block scalar).
pub trait Editor {
    /// Writes a duration over the one at `span`. Each method gives `None`
    /// where the file's syntax cannot say the change exactly.
    fn replace_duration(&self, span: Span, duration: &str) -> Option<Edit>;
    /// Declares the event with nothing but its name, with the other
    /// declarations, or in a new section where there are none.
    fn declare_event(&self, name: &str) -> Option<Vec<Edit>>;
    /// Removes the `allow` of the lint named at `lint`; the whole `allow`
    /// section of its state when `all_of_state` (every entry goes).
    fn remove_allow(&self, lint: Span, all_of_state: bool) -> Option<Vec<Edit>>;
    /// Gives the event declared at `event` the id field `field`.
    fn add_event_id(&self, event: Span, field: &str) -> Option<Vec<Edit>>;
    /// Adds a context field whose initial value is the empty list.
    fn add_context_list(&self, name: &str) -> Option<Vec<Edit>>;
    /// Makes `test` a condition of the transition at `transition`: its
    /// guard, or the first conjunct of the guard it has.
    fn add_guard(&self, transition: Span, test: &str) -> Option<Vec<Edit>>;
    /// Adds `name: expr` to the assign that holds the field at `field`.
    fn add_assign_field(&self, field: Span, name: &str, expr: &str) -> Option<Vec<Edit>>;
    /// Allows the lint `lint` with `reason` on the state whose key is at
    /// `state` (the machine's top level when `None`).
    fn add_allow(&self, state: Option<Span>, lint: &str, reason: &str) -> Option<Vec<Edit>>;
    /// Sets the machine's `version`, written where the format puts it when
    /// the file has none. The formats read as written (XState, SCXML) have
    /// no version of their own, so their editors keep this default.
    fn set_version(&self, _version: u64) -> Option<Vec<Edit>> {
        None
    }
    /// Declares a migration from version `from` that maps the old state
    /// paths `states` to new ones and gives the context fields `context`
    /// their expressions; `None` where the file already declares
    /// migrations (the author extends them) or has no place for them.
    fn add_migration(
        &self,
        _from: u64,
        _states: &[(String, String)],
        _context: &[(String, String)],
    ) -> Option<Vec<Edit>> {
        None
    }
}

/// The byte offset of the line start before `at`.
pub(crate) fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// The offset of the line break at or after `at` (of its `\r` in a
/// `\r\n`), or the end of the text.
pub(crate) fn line_end(text: &str, at: usize) -> usize {
    match text[at..].find('\n') {
        Some(i) if i > 0 && text.as_bytes()[at + i - 1] == b'\r' => at + i - 1,
        Some(i) => at + i,
        None => text.len(),
    }
}

/// Just after the line break at `at` (`\n` or `\r\n`), or `at` at the end.
fn after_break(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    at + if rest.starts_with("\r\n") {
        2
    } else {
        usize::from(rest.starts_with('\n'))
    }
}

/// The indentation (leading spaces and tabs) of the line holding `at`.
pub(crate) fn indentation(text: &str, at: usize) -> &str {
    let start = line_start(text, at);
    let line = &text[start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// Whether only spaces and tabs lie between the start of the line and `at`.
pub(crate) fn starts_line(text: &str, at: usize) -> bool {
    text[line_start(text, at)..at]
        .chars()
        .all(|c| c == ' ' || c == '\t')
}

/// Where a removal of a whole item that starts at `start` and ends at `end`
/// should begin and end: its whole lines, line break included, when nothing
/// else is on them but a trailing comment (`comment` is the syntax's marker);
/// else the item itself with the spaces after it.
pub(crate) fn removal(text: &str, start: usize, end: usize, comment: &str) -> Span {
    let rest = text[end..line_end(text, end)].trim_start_matches([' ', '\t']);
    let alone = starts_line(text, start) && (rest.is_empty() || rest.starts_with(comment));
    if alone {
        let to = after_break(text, line_end(text, end));
        Span::new(line_start(text, start), to)
    } else {
        let spaces = text[end..].len() - text[end..].trim_start_matches([' ', '\t']).len();
        Span::new(start, end + spaces)
    }
}

/// Where to insert an item after one that ends at `end`: at the end of its
/// line, on a line of its own, when only a comment follows it there;
/// right after it, on the same line, when something else does. The flag
/// says whether the insertion starts a new line.
pub(crate) fn after_item(text: &str, end: usize, comment: &str) -> (usize, bool) {
    let eol = line_end(text, end);
    let rest = text[end..eol].trim_start_matches([' ', '\t']);
    if rest.is_empty() || rest.starts_with(comment) {
        (eol, true)
    } else {
        (end, false)
    }
}

/// The start of the comment lines directly above the line at `at` (no
/// blank line between), so that an insertion before an item does not come
/// between the item and the comment about it.
pub(crate) fn above_comments(text: &str, at: usize, comment: &str) -> usize {
    let mut start = line_start(text, at);
    while start > 0 {
        let previous = line_start(text, start - 1);
        if text[previous..start].trim_start().starts_with(comment) {
            start = previous;
        } else {
            break;
        }
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_helpers_find_whole_lines_and_comments() {
        let text = "a: 1\n  # about b\n  b: 2 # two\nc: 3";
        let b = text.find("b: 2").unwrap();
        assert_eq!(indentation(text, b), "  ");
        assert!(starts_line(text, b));
        let end = b + "b: 2".len();
        let removed = removal(text, b, end, "#");
        assert_eq!(&text[removed.range()], "  b: 2 # two\n");
        assert_eq!(&text[above_comments(text, b, "#")..b], "  # about b\n  ");
        assert_eq!(after_item(text, end, "#"), (line_end(text, end), true));
        let one_line = "x { a = 1 }";
        assert_eq!(after_item(one_line, 9, "//"), (9, false));
    }
}
