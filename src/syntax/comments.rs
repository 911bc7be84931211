//! The comments of a machine file, attached to the nodes they belong to, so
//! that the printers can write them back where they were.
//!
//! The model knows no syntax and holds no comment; the comments are kept here,
//! beside it, each keyed by an [`Anchor`] that names a node of the model (a
//! state by its path, a transition by where it was written, a declaration by
//! its name) or a top-level key of the file. A comment on a line of its own
//! belongs to the node that follows it; a comment after code on its line
//! belongs to the first node written on that line, or, on a line that starts
//! none, to the node the line is part of. Comments that no node follows are
//! kept for the end of the file.

use std::cell::RefCell;

use indexmap::IndexMap;

use crate::model::Machine;

/// A comment as a front-end found it: its text after the marker (`#`, `//`),
/// and the byte offset of the marker.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    pub start: u32,
    pub text: String,
}

/// What a comment is attached to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Anchor {
    /// A top-level key of the YAML form (`machine`, `context`, `events`,
    /// `initial`, `states`, ...); in the DSL, the header is `machine` and the
    /// top-level declarations without a name of their own go by their YAML
    /// keys (`context`, `guards`, `dedup`, `initial`, ...).
    Key(String),
    Context(String),
    Source(String),
    Event(String),
    Effect(String),
    /// A state below the root, by its path.
    State(String),
    /// A transition, by the offset where it is written in the file the
    /// comments were read from (the model keeps that span).
    Transition(u32),
}

/// The comments of one node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attached {
    /// Own-line comments written above the node, in order.
    pub before: Vec<String>,
    /// The comment at the end of the node's first line.
    pub trailing: Option<String>,
}

/// The comments of a file, attached to the nodes of its machine.
#[derive(Clone, Debug, Default)]
pub struct Comments {
    attached: IndexMap<Anchor, Attached>,
    end: Vec<String>,
}

impl Comments {
    /// Attaches the comments found in `text` to the nodes of `machine`, which
    /// was read from it, and to the top-level `keys` the front-end found
    /// (each with its offset).
    pub(crate) fn attach(
        text: &str,
        found: Vec<Found>,
        keys: Vec<(u32, String)>,
        machine: &Machine,
    ) -> Comments {
        let mut anchors: Vec<(u32, Anchor)> = keys
            .into_iter()
            .map(|(at, key)| (at, Anchor::Key(key)))
            .collect();
        let named = |kind: fn(String) -> Anchor, name: &String, at: u32| (at, kind(name.clone()));
        anchors.extend(
            machine
                .context
                .iter()
                .map(|(n, f)| named(Anchor::Context, n, f.span.start)),
        );
        anchors.extend(
            machine
                .sources
                .iter()
                .map(|(n, s)| named(Anchor::Source, n, s.span.start)),
        );
        anchors.extend(
            machine
                .events
                .iter()
                .map(|(n, e)| named(Anchor::Event, n, e.span.start)),
        );
        anchors.extend(
            machine
                .effects
                .iter()
                .map(|(n, e)| named(Anchor::Effect, n, e.span.start)),
        );
        anchors.extend(
            machine
                .states
                .iter()
                .skip(1)
                .map(|s| (s.span.start, Anchor::State(s.path.clone()))),
        );
        anchors.extend(
            machine
                .transitions
                .iter()
                .map(|t| (t.span.start, Anchor::Transition(t.span.start))),
        );
        // Stable: at one offset, a key comes before the node it holds.
        anchors.sort_by_key(|(at, _)| *at);

        let mut comments = Comments::default();
        let mut previous: Option<u32> = None;
        for comment in found {
            let line_start = text[..comment.start as usize]
                .rfind('\n')
                .map_or(0, |i| i + 1) as u32;
            let own_line = text[line_start as usize..comment.start as usize]
                .trim()
                .is_empty();
            let after_previous = previous.replace(comment.start);
            if !own_line {
                // The first node of the line; on a line of none (a key
                // inside a node, `retention: 7d  # ...`), the node the line
                // is part of, which is the last before it, unless another
                // comment came between them (it would then come after).
                let on_line = anchors
                    .iter()
                    .find(|(at, _)| (line_start..comment.start).contains(at))
                    .or_else(|| {
                        anchors
                            .iter()
                            .rev()
                            .find(|(at, _)| *at < comment.start)
                            .filter(|(at, _)| after_previous.is_none_or(|p| p < *at))
                    });
                if let Some((_, anchor)) = on_line {
                    let slot = comments.attached.entry(anchor.clone()).or_default();
                    if slot.trailing.is_none() {
                        slot.trailing = Some(comment.text);
                        continue;
                    }
                }
            }
            match anchors.iter().find(|(at, _)| *at > comment.start) {
                Some((_, anchor)) => comments
                    .attached
                    .entry(anchor.clone())
                    .or_default()
                    .before
                    .push(comment.text),
                None => comments.end.push(comment.text),
            }
        }
        comments.attached.retain(|_, a| *a != Attached::default());
        comments
    }

    /// Every comment's text, in the order of the file.
    pub fn texts(&self) -> Vec<&str> {
        let mut texts: Vec<&str> = Vec::new();
        for attached in self.attached.values() {
            texts.extend(attached.before.iter().map(String::as_str));
            texts.extend(attached.trailing.as_deref());
        }
        texts.extend(self.end.iter().map(String::as_str));
        texts
    }

    pub fn is_empty(&self) -> bool {
        self.attached.is_empty() && self.end.is_empty()
    }
}

/// The comments a printer has yet to write: each node's are taken as the node
/// is printed, and whatever no printed node took is written at the end, so
/// that no comment is lost.
pub(crate) struct Pending {
    attached: RefCell<IndexMap<Anchor, Attached>>,
    end: Vec<String>,
}

impl Pending {
    pub fn new(comments: &Comments) -> Pending {
        Pending {
            attached: RefCell::new(comments.attached.clone()),
            end: comments.end.clone(),
        }
    }

    /// The comments of `anchor`, once; nothing the second time.
    pub fn take(&self, anchor: &Anchor) -> Attached {
        self.attached
            .borrow_mut()
            .shift_remove(anchor)
            .unwrap_or_default()
    }

    /// The comments of a key, which has no line of its own in the target
    /// syntax: its trailing comment follows those above it.
    pub fn take_key(&self, key: &str) -> Vec<String> {
        let attached = self.take(&Anchor::Key(key.to_string()));
        let mut lines = attached.before;
        lines.extend(attached.trailing);
        lines
    }

    /// The comments left for the end: those of nodes that were not printed,
    /// in order, then those after the last node.
    pub fn rest(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (_, attached) in self.attached.borrow_mut().drain(..) {
            lines.extend(attached.before);
            lines.extend(attached.trailing);
        }
        lines.extend(self.end.iter().cloned());
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str, marker: &str) -> Vec<Found> {
        let mut out = Vec::new();
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            if let Some(i) = line.find(marker) {
                out.push(Found {
                    start: (offset + i) as u32,
                    text: line[i + marker.len()..].trim_end().to_string(),
                });
            }
            offset += line.len();
        }
        out
    }

    #[test]
    fn own_line_comments_go_to_the_next_node_and_trailing_ones_to_their_line() {
        let text =
            "# top\nmachine: m\n# before a\ninitial: a\nstates:\n  a: {}  # on a\n  b: {}\n# end\n";
        let machine = crate::syntax::parse(text, crate::syntax::Syntax::Yaml).unwrap();
        let keys = vec![(6, "machine".to_string()), (28, "initial".to_string())];
        let comments = Comments::attach(text, found(text, "#"), keys, &machine);
        let pending = Pending::new(&comments);
        assert_eq!(
            pending.take(&Anchor::Key("machine".into())).before,
            [" top"]
        );
        assert_eq!(pending.take_key("initial"), [" before a"]);
        let a = pending.take(&Anchor::State("a".into()));
        assert_eq!((a.before.len(), a.trailing.as_deref()), (0, Some(" on a")));
        assert_eq!(
            pending.take(&Anchor::State("b".into())),
            Attached::default()
        );
        assert_eq!(pending.rest(), [" end"]);
        assert_eq!(comments.texts(), [" top", " before a", " on a", " end"]);
    }
}
