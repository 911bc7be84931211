//! The comments of a YAML file, for the printers (`syntax::comments`).
//!
//! The node trees hold no comments, so they are found in the text: a `#` at
//! the start of a line or after a space or tab starts a comment, unless it is
//! inside a scalar (a quoted string, a block scalar), which the node tree
//! places.

use crate::span::{SourceFile, Span};
use crate::syntax::comments::Found;

use super::node::{Kind, Node};

/// The comments of the file, in order, and the offsets of its top-level
/// keys; nothing where the file does not read as YAML.
pub(crate) fn find(file: &SourceFile) -> (Vec<Found>, Vec<(u32, String)>) {
    let tree = super::node_tree(file);
    let Ok(root) = tree.as_ref() else {
        return (Vec::new(), Vec::new());
    };
    let mut scalars = Vec::new();
    scalar_spans(root, &mut scalars);
    scalars.sort_by_key(|s| s.start);
    let keys = match &root.kind {
        Kind::Map(entries) => entries
            .iter()
            .filter_map(|(k, _)| Some((k.span.start, k.text()?.to_string())))
            .collect(),
        _ => Vec::new(),
    };
    (scan(&file.text, &scalars), keys)
}

/// The spans of every scalar, keys included, whose text a `#` may be part of.
fn scalar_spans(node: &Node, out: &mut Vec<Span>) {
    match &node.kind {
        Kind::Scalar(_) => out.push(node.span),
        Kind::Seq(items) => items.iter().for_each(|item| scalar_spans(item, out)),
        Kind::Map(entries) => {
            for (key, value) in entries {
                scalar_spans(key, out);
                scalar_spans(value, out);
            }
        }
    }
}

/// The comments of `text`, whose scalars are at `scalars` (sorted by start).
fn scan(text: &str, scalars: &[Span]) -> Vec<Found> {
    let inside = |at: u32| {
        let after = scalars.partition_point(|s| s.start <= at);
        after > 0 && at < scalars[after - 1].end
    };
    let mut found = Vec::new();
    let mut line_start = 0usize;
    for line in text.split_inclusive('\n') {
        let bytes = line.as_bytes();
        let comment = (0..bytes.len()).find(|&i| {
            bytes[i] == b'#'
                && (i == 0 || matches!(bytes[i - 1], b' ' | b'\t'))
                && !inside((line_start + i) as u32)
        });
        if let Some(i) = comment {
            found.push(Found {
                start: (line_start + i) as u32,
                text: line[i + 1..].trim_end_matches(['\n', '\r']).to_string(),
            });
        }
        line_start += line.len();
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        find(&SourceFile::new("", text))
            .0
            .into_iter()
            .map(|f| f.text)
            .collect()
    }

    #[test]
    fn a_hash_inside_a_scalar_is_no_comment() {
        let text = "# one\nmachine: 'a # b'  # two\ndescription: |\n  # not\n  text\nx: \"#\" #three\ny: a#b\n";
        assert_eq!(texts(text), [" one", " two", "three"]);
    }
}
