//! Diagnostics: what every stage reports, with its position, and the fix
//! that removes it where one is known.
//!
//! A [`Fix`] is plain data: a few [`Edit`]s, each a byte range of the file as
//! loaded and the text that replaces it. The lints that can repair what they
//! report attach one; `crate::fix` applies them, above the editors of every
//! syntax, so that this module depends on nothing but spans.

use crate::span::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// What a reader should know but need not act on: a part of an XState
    /// machine that could not be translated and is opaque to the linter.
    Note,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A secondary place that explains a diagnostic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// One finding or load error, at a place in one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Stable code, `S001`, `I004` or `E003`.
    pub code: &'static str,
    /// Stable kebab-case name, `unknown-target`.
    pub name: &'static str,
    pub severity: Severity,
    pub message: String,
    pub span: Span,
    pub labels: Vec<Label>,
    pub help: Option<String>,
    /// For idempotency findings: the shortest event sequence from the initial
    /// configuration that shows the hazard, the repeated delivery last with a
    /// trailing `*`. Empty for the others.
    pub witness: Vec<String>,
    /// What replaying the witness in the interpreter (and searching the
    /// machine's runs) showed; `None` where no replay was made.
    pub verdict: Option<Verdict>,
    /// What the replay said when it did not confirm: what refuted the
    /// finding, the guard or bound at which it was not shown, or why it
    /// could not decide.
    pub replay: Option<String>,
    /// Text edits that remove the finding, where the lint knows them.
    pub fix: Option<Fix>,
}

/// What the replay of a finding said (`docs/lint.md`, "How a finding is
/// confirmed").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// A replayed run of the interpreter shows the harm.
    Confirmed,
    /// No run shows the harm, whatever the payloads and whatever the host
    /// answers: the claim is proved impossible (its first delivery is never
    /// taken, its repeat is refused for every payload, the state is never
    /// entered again). A graph hazard refuted is not reported unless asked.
    Refuted,
    /// No run the replay and its search tried shows the harm, and none is
    /// proved impossible: the search ended at a bound, or no payload it
    /// tried satisfies a guard. `replay` names which. A graph hazard not
    /// shown is reported as a note.
    NotShown,
    /// The run rests on what only the host program knows: a host guard it
    /// asks, or a part idemchart could not read (`opaque-code`). The finding
    /// keeps its level.
    Undecided,
}

impl Verdict {
    /// `confirmed`, `refuted`, `not-shown` or `undecided`: the `verdict` of
    /// the JSON and SARIF outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Confirmed => "confirmed",
            Verdict::Refuted => "refuted",
            Verdict::NotShown => "not-shown",
            Verdict::Undecided => "undecided",
        }
    }

    /// The `confirmed` of the JSON and SARIF outputs, as it was before the
    /// verdict had four values: `true` when confirmed, `false` when
    /// refuted, `null` otherwise.
    pub fn confirmed(verdict: Option<Verdict>) -> Option<bool> {
        match verdict {
            Some(Verdict::Confirmed) => Some(true),
            Some(Verdict::Refuted) => Some(false),
            _ => None,
        }
    }
}

/// Whether a fix may be applied without review.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Applicability {
    /// It keeps what the machine does: `--fix` applies it.
    Safe,
    /// It changes what the machine or the runtime does, as the finding
    /// asks, in a way the author should review: only `--unsafe-fixes`
    /// applies it.
    Unsafe,
}

impl Applicability {
    pub fn as_str(self) -> &'static str {
        match self {
            Applicability::Safe => "safe",
            Applicability::Unsafe => "unsafe",
        }
    }
}

/// One replacement: the text at `span` (a byte range of the file the fix was
/// computed on; empty for an insertion) becomes `replacement`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub span: Span,
    pub replacement: String,
}

impl Edit {
    pub fn new(span: Span, replacement: impl Into<String>) -> Edit {
        Edit {
            span,
            replacement: replacement.into(),
        }
    }

    /// `replacement` inserted at `offset`.
    pub fn insert(offset: usize, replacement: impl Into<String>) -> Edit {
        Edit::new(Span::new(offset, offset), replacement)
    }

    /// The text at `span` removed.
    pub fn delete(span: Span) -> Edit {
        Edit::new(span, "")
    }

    /// The edit as a comparable value: spans compare equal whatever they
    /// hold (`Span`'s `PartialEq`), so identity goes through this.
    pub(crate) fn key(&self) -> (u32, u32, &str) {
        (self.span.start, self.span.end, &self.replacement)
    }

    pub(crate) fn is_insertion(&self) -> bool {
        self.span.start == self.span.end
    }
}

/// What to change in the file to remove one finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    pub applicability: Applicability,
    /// What the fix does, as an imperative: "declare `PAGO` under `events:`".
    pub message: String,
    /// Non-overlapping edits of one file.
    pub edits: Vec<Edit>,
}

impl Fix {
    pub fn safe_edits(message: impl Into<String>, edits: Vec<Edit>) -> Fix {
        Fix {
            applicability: Applicability::Safe,
            message: message.into(),
            edits,
        }
    }

    pub fn unsafe_edits(message: impl Into<String>, edits: Vec<Edit>) -> Fix {
        Fix {
            applicability: Applicability::Unsafe,
            message: message.into(),
            edits,
        }
    }

    /// Whether `--fix`, with `--unsafe-fixes` or without, applies it.
    pub fn applies(&self, unsafe_fixes: bool) -> bool {
        self.applicability == Applicability::Safe || unsafe_fixes
    }

    /// The edits, sorted, as comparable values.
    pub(crate) fn keys(&self) -> Vec<(u32, u32, &str)> {
        let mut keys: Vec<_> = self.edits.iter().map(Edit::key).collect();
        keys.sort();
        keys
    }

    /// Whether an edit of one fix lies in, or touches, one of the other's:
    /// applying both at once would leave their order to chance, so the
    /// second waits for the next pass. Two replacements that only meet at
    /// a boundary do not conflict.
    pub(crate) fn conflicts(&self, other: &Fix) -> bool {
        self.edits.iter().any(|a| {
            other.edits.iter().any(|b| {
                let (a0, a1, b0, b1) = (a.span.start, a.span.end, b.span.start, b.span.end);
                let apart = a1 < b0 || b1 < a0;
                let meeting = (a1 == b0 || b1 == a0) && !a.is_insertion() && !b.is_insertion();
                !apart && !meeting
            })
        })
    }
}

/// Everything that stops a file from loading into a model.
///
/// Each variant has a stable code and name; the S codes are shared with the
/// lint table of the spec, the E codes belong to loading alone.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("{message}")]
    Syntax { message: String },
    #[error("unknown key `{key}`")]
    UnknownKey { key: String },
    #[error("{message}")]
    InvalidValue { message: String },
    #[error("`{key}` is defined twice")]
    Duplicate { key: String, first: Span },
    #[error("unknown target `{target}`")]
    UnknownTarget { target: String },
    #[error("{message}")]
    InvalidInitial { message: String },
    #[error("{message}")]
    InvalidHistory { message: String },
    #[error("invalid duration `{text}`: write a whole number followed by ms, s, m, h or d")]
    InvalidDuration { text: String },
    #[error("unknown {kind} `{name}`")]
    UnknownReference { kind: &'static str, name: String },
    #[error("{message}")]
    InvalidExpression { message: String },
    #[error("unknown context field `{field}`")]
    UnknownContextField { field: String },
}

impl LoadError {
    pub fn code(&self) -> &'static str {
        match self {
            LoadError::Syntax { .. } => "E001",
            LoadError::UnknownKey { .. } => "E002",
            LoadError::InvalidValue { .. } => "E003",
            LoadError::Duplicate { .. } => "E004",
            LoadError::InvalidInitial { .. } => "E005",
            LoadError::InvalidHistory { .. } => "E006",
            LoadError::InvalidDuration { .. } => "E007",
            LoadError::UnknownReference { .. } => "E008",
            LoadError::UnknownTarget { .. } => "S001",
            LoadError::InvalidExpression { .. } => "S007",
            LoadError::UnknownContextField { .. } => "S008",
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            LoadError::Syntax { .. } => "syntax-error",
            LoadError::UnknownKey { .. } => "unknown-key",
            LoadError::InvalidValue { .. } => "invalid-value",
            LoadError::Duplicate { .. } => "duplicate-definition",
            LoadError::InvalidInitial { .. } => "invalid-initial",
            LoadError::InvalidHistory { .. } => "invalid-history",
            LoadError::InvalidDuration { .. } => "invalid-duration",
            LoadError::UnknownReference { .. } => "unknown-reference",
            LoadError::UnknownTarget { .. } => "unknown-target",
            LoadError::InvalidExpression { .. } => "invalid-expression",
            LoadError::UnknownContextField { .. } => "unknown-context-field",
        }
    }

    /// The diagnostic for this error at `span`, with a "did you mean" when one
    /// of `candidates` is close to the name that was not found.
    pub fn at<'a>(self, span: Span, candidates: impl IntoIterator<Item = &'a str>) -> Diagnostic {
        let wrong = match &self {
            LoadError::UnknownKey { key, .. } => Some(key.as_str()),
            LoadError::UnknownTarget { target, .. } => Some(target.as_str()),
            LoadError::UnknownReference { name, .. } => Some(name.as_str()),
            LoadError::UnknownContextField { field } => Some(field.as_str()),
            _ => None,
        };
        let help = wrong
            .and_then(|wrong| did_you_mean(wrong, candidates))
            .map(|s| format!("did you mean `{s}`?"));
        let labels = match &self {
            LoadError::Duplicate { first, .. } => {
                vec![Label {
                    span: *first,
                    message: "first defined here".to_string(),
                }]
            }
            _ => Vec::new(),
        };
        Diagnostic {
            code: self.code(),
            name: self.name(),
            severity: Severity::Error,
            message: self.to_string(),
            span,
            labels,
            help,
            witness: Vec::new(),
            verdict: None,
            replay: None,
            fix: None,
        }
    }
}

/// How alike (Jaro-Winkler) a name must be to a candidate to be its typo.
const TYPO_SIMILARITY: f64 = 0.8;

/// The candidate closest to `wrong`, if it is close enough to be a typo.
pub fn did_you_mean<'a>(
    wrong: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(wrong, c), c))
        .filter(|(score, _)| *score > TYPO_SIMILARITY)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// The candidate closest to `wrong` when it is so close that `wrong` can
/// only be a typo of it (one or two letters off, in a name of some length);
/// for names that may also stand for something of their own.
pub fn did_you_mean_strictly<'a>(
    wrong: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .filter(|c| *c != wrong && c.chars().count() >= 5)
        .map(|c| (strsim::damerau_levenshtein(wrong, c), c))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

/// The one candidate close enough to `wrong` to be a typo, when exactly one
/// is: a fix may then replace `wrong` with it.
pub fn sole_close_name<'a>(
    wrong: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut close = candidates
        .into_iter()
        .filter(|c| strsim::jaro_winkler(wrong, c) > TYPO_SIMILARITY);
    let first = close.next()?;
    close.all(|other| other == first).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(did_you_mean("pagdo", ["pagado", "enviado"]), Some("pagado"));
        assert_eq!(did_you_mean("xyz", ["pagado", "enviado"]), None);
        let strictly = |w| did_you_mean_strictly(w, ["cobrarTarjeta", "enviarContrato", "mail"]);
        assert_eq!(strictly("cobrarTarjta"), Some("cobrarTarjeta"));
        assert_eq!(strictly("cobrarEnvio"), None);
        assert_eq!(strictly("mails"), None);
        assert_eq!(
            sole_close_name("pagdo", ["pagado", "enviado"]),
            Some("pagado")
        );
        assert_eq!(sole_close_name("pagdo", ["pagado", "pagados"]), None);
    }
}
