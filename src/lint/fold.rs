//! One finding for one problem: findings that another finding of the same
//! run covers are folded into it (`docs/lint.md`, "One finding for one
//! problem"). It runs after the configured levels and allows are applied
//! (`Config::apply`), so that a lint given its own level, or allowed, is
//! never hidden inside another.

use std::collections::HashMap;
use std::ops::Range;

use super::Lint;
use crate::diagnostic::Diagnostic;
use crate::span::Span;

/// The findings that another finding of the same run covers: `(minor,
/// major)`. A retry after an error that is, by the same run, a late repeat
/// accepted again after the cycle (I003 in I008); a repeat taken again whose
/// harm is the cumulative update on that transition (I001 in I004).
const FOLDS: [(Lint, Lint); 2] = [
    (Lint::CycleReenablesEvent, Lint::RetryWithoutVerification),
    (Lint::SelfAcceptingEvent, Lint::CumulativeUpdate),
];

/// Folds each finding into the finding of `FOLDS` that the same run shows at
/// its place (the major's own place, or a place it labels): a reader sees
/// one finding for one problem, its message saying both parts, and the
/// minor's labels kept. A minor stands on its own where no major is reported
/// (another lint selection, an allow, a fact that answers the major).
///
/// `same_level(minor, major)` says whether the configuration gives the two
/// lints (by code) one level: one given a level of its own, say `--deny I001`,
/// is never folded, even where its finding stays a note.
pub fn fold_covered(diagnostics: &mut Vec<Diagnostic>, same_level: impl Fn(&str, &str) -> bool) {
    // Where each major stands or points is looked up, not searched: a large
    // machine has thousands of findings.
    let covers = |major: &Diagnostic, minor: &Diagnostic| {
        !minor.witness.is_empty()
            && major.severity == minor.severity
            && major.verdict == minor.verdict
            && major.replay == minor.replay
            && major.witness == minor.witness
    };
    // The replay's account ends both messages alike; the folded message
    // says it once, at its end.
    let account = |d: &Diagnostic| super::account_suffix(d.verdict, d.replay.as_deref());
    let mut folded = vec![false; diagnostics.len()];
    for (minor_lint, major_lint) in FOLDS {
        if !same_level(minor_lint.code(), major_lint.code()) {
            continue;
        }
        // The majors at each place: their own, and those they label.
        let mut at: HashMap<Range<usize>, Vec<usize>> = HashMap::new();
        for (i, d) in diagnostics.iter().enumerate() {
            if d.code == major_lint.code() && !folded[i] {
                at.entry(d.span.range()).or_default().push(i);
                for label in &d.labels {
                    let places = at.entry(label.span.range()).or_default();
                    if places.last() != Some(&i) {
                        places.push(i);
                    }
                }
            }
        }
        for minor in 0..diagnostics.len() {
            if diagnostics[minor].code != minor_lint.code() || folded[minor] {
                continue;
            }
            let candidates = at.get(&diagnostics[minor].span.range());
            let Some(major) =
                candidates.into_iter().flatten().copied().find(|&major| {
                    !folded[major] && covers(&diagnostics[major], &diagnostics[minor])
                })
            else {
                continue;
            };
            let suffix = account(&diagnostics[minor]);
            let message = std::mem::take(&mut diagnostics[minor].message);
            let labels = std::mem::take(&mut diagnostics[minor].labels);
            let fix = diagnostics[minor].fix.take();
            let into = &mut diagnostics[major];
            // The minor's fix stands for the pair where the major has none.
            if into.fix.is_none() {
                into.fix = fix;
            }
            let own = into.message.strip_suffix(&suffix).unwrap_or(&into.message);
            let theirs = message.strip_suffix(&suffix).unwrap_or(&message);
            into.message = format!("{own}; and {theirs} ({}){suffix}", minor_lint.code());
            for label in labels {
                if !into.labels.iter().any(|l| same(l.span, label.span)) {
                    into.labels.push(label);
                }
            }
            folded[minor] = true;
        }
    }
    let mut index = 0;
    diagnostics.retain(|_| {
        index += 1;
        !folded[index - 1]
    });
}

/// Whether two spans are one place (`Span`'s `==` holds for any two, so
/// that spans never make two models unequal).
fn same(a: Span, b: Span) -> bool {
    a.range() == b.range()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::{Fix, Label, Severity, Verdict};

    fn finding(lint: Lint, at: u32, witness: &[&str], message: &str) -> Diagnostic {
        Diagnostic {
            code: lint.code(),
            name: lint.name(),
            severity: Severity::Warning,
            message: message.into(),
            span: Span::new(at as usize, at as usize + 5),
            labels: Vec::new(),
            help: None,
            witness: witness.iter().map(|s| s.to_string()).collect(),
            verdict: Some(Verdict::Confirmed),
            replay: None,
            fix: None,
        }
    }

    fn label(at: u32, message: &str) -> Label {
        Label {
            span: Span::new(at as usize, at as usize + 5),
            message: message.into(),
        }
    }

    const RUN: [&str; 3] = ["PAY", "error", "RETRY*"];

    #[test]
    fn a_cycle_shown_by_the_retrys_run_is_said_in_the_retry() {
        let mut cycle = finding(
            Lint::CycleReenablesEvent,
            10,
            &RUN,
            "`RETRY` is accepted again",
        );
        cycle.labels.push(label(40, "on the cycle here too"));
        let retry = finding(
            Lint::RetryWithoutVerification,
            10,
            &RUN,
            "this retries `charge`",
        );
        let mut found = vec![cycle, retry];
        fold_covered(&mut found, |_, _| true);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].code, "I008");
        assert_eq!(
            found[0].message,
            "this retries `charge`; and `RETRY` is accepted again (I003)"
        );
        assert_eq!(found[0].labels, [label(40, "on the cycle here too")]);
    }

    #[test]
    fn findings_of_other_runs_places_levels_or_verdicts_stay_apart() {
        let retry = || finding(Lint::RetryWithoutVerification, 10, &RUN, "retry");
        let cycle = || finding(Lint::CycleReenablesEvent, 10, &RUN, "cycle");
        let mut other_run = cycle();
        other_run.witness.insert(0, "PAY".into());
        let mut other_place = cycle();
        other_place.span = Span::new(20, 25);
        let mut denied = cycle();
        denied.severity = Severity::Error;
        let mut undecided = cycle();
        undecided.verdict = Some(Verdict::Undecided);
        for (case, minor) in [other_run, other_place, denied, undecided]
            .into_iter()
            .enumerate()
        {
            let mut found = vec![retry(), minor];
            fold_covered(&mut found, |_, _| true);
            assert_eq!(found.len(), 2, "case {case}: {found:#?}");
        }
        // Lints the configuration gives two levels stay apart.
        let mut found = vec![retry(), cycle()];
        fold_covered(&mut found, |minor, _| minor != "I003");
        assert_eq!(found.len(), 2, "{found:#?}");
        // An I001 never folds into an I008, only into the I004 of its
        // transition.
        let mut found = vec![
            retry(),
            finding(Lint::SelfAcceptingEvent, 10, &RUN, "repeat"),
        ];
        fold_covered(&mut found, |_, _| true);
        assert_eq!(found.len(), 2, "{found:#?}");
    }

    #[test]
    fn a_repeat_folds_into_the_update_that_labels_its_transition_with_one_account() {
        let why = "no payload passes the guard";
        let not_shown = |lint, at, message: &str| {
            let mut d = finding(
                lint,
                at,
                &["TICK", "OPEN*"],
                &format!("{message} (not shown: {why})"),
            );
            d.verdict = Some(Verdict::NotShown);
            d.severity = Severity::Note;
            d.replay = Some(why.into());
            d
        };
        let mut update = not_shown(Lint::CumulativeUpdate, 30, "`unlocks` is counted twice");
        update.labels.push(label(10, "on this transition"));
        let mut repeat = not_shown(
            Lint::SelfAcceptingEvent,
            10,
            "a repeated `OPEN` is taken again",
        );
        repeat.fix = Some(Fix::safe_edits("guard `OPEN`", Vec::new()));
        let mut found = vec![repeat, update];
        fold_covered(&mut found, |_, _| true);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(
            found[0].message,
            format!(
                "`unlocks` is counted twice; and a repeated `OPEN` is taken again (I001) (not shown: {why})"
            )
        );
        // The update had no fix: the repeat's stands for both.
        assert_eq!(
            found[0].fix.as_ref().map(|f| f.message.as_str()),
            Some("guard `OPEN`")
        );
    }
}
