//! Findings counted by code, as ruff's `--statistics` does: the table at the
//! end of the human report, and all that `idemchart lint --statistics`
//! prints (as text, or as a JSON object with `--format json`).

use serde::Serialize;

use super::{FileReport, Summary};
use crate::diagnostic::Verdict;

/// The findings of one code in a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CodeCount {
    pub code: &'static str,
    pub lint: &'static str,
    pub count: usize,
    /// Findings the replay confirmed (`verdict: confirmed`).
    pub confirmed: usize,
    /// Findings no run the replay tried shows, unproved (`verdict:
    /// not-shown`): reported as notes.
    pub not_shown: usize,
    /// Findings whose replay rests on a host guard or opaque code
    /// (`verdict: undecided`). A finding that was never replayed (no
    /// witness) is none of these.
    pub undecided: usize,
    /// Findings proved impossible (`verdict: refuted`), reported only with
    /// `--show-refuted`.
    pub refuted: usize,
}

/// One row per code found, the most frequent first, then by code.
pub fn statistics(reports: &[FileReport]) -> Vec<CodeCount> {
    let mut rows: Vec<CodeCount> = Vec::new();
    for d in reports.iter().flat_map(|r| &r.diagnostics) {
        let index = match rows.iter().position(|row| row.code == d.code) {
            Some(index) => index,
            None => {
                rows.push(CodeCount {
                    code: d.code,
                    lint: d.name,
                    count: 0,
                    confirmed: 0,
                    not_shown: 0,
                    undecided: 0,
                    refuted: 0,
                });
                rows.len() - 1
            }
        };
        let row = &mut rows[index];
        row.count += 1;
        match d.verdict {
            Some(Verdict::Confirmed) => row.confirmed += 1,
            Some(Verdict::NotShown) => row.not_shown += 1,
            Some(Verdict::Undecided) => row.undecided += 1,
            Some(Verdict::Refuted) => row.refuted += 1,
            None => {}
        }
    }
    rows.sort_by(|a, b| b.count.cmp(&a.count).then(a.code.cmp(b.code)));
    rows
}

/// The table for people: a header, then one aligned row per code; nothing
/// when nothing was found. The `refuted` column is there only when some
/// finding is (`--show-refuted`).
pub fn statistics_table(rows: &[CodeCount]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let name_width = rows.iter().map(|r| r.lint.len()).max().unwrap_or(0);
    let code_width = rows.iter().map(|r| r.code.len()).max().unwrap_or(0);
    let refuted = rows.iter().any(|r| r.refuted > 0);
    let line = |count: &str, code: &str, name: &str, verdicts: [&str; 4]| {
        let [confirmed, not_shown, undecided, refuted_count] = verdicts;
        let mut out = format!(
            "{count:>5}  {code:<code_width$}  {name:<name_width$}  {confirmed:>9}  {not_shown:>9}  {undecided:>9}"
        );
        if refuted {
            out.push_str(&format!("  {refuted_count:>7}"));
        }
        out.push('\n');
        out
    };
    let mut out = line(
        "count",
        "code",
        "name",
        ["confirmed", "not shown", "undecided", "refuted"],
    );
    for r in rows {
        out.push_str(&line(
            &r.count.to_string(),
            r.code,
            r.lint,
            [
                &r.confirmed.to_string(),
                &r.not_shown.to_string(),
                &r.undecided.to_string(),
                &r.refuted.to_string(),
            ],
        ));
    }
    out
}

#[derive(Serialize)]
struct StatisticsDocument {
    statistics: Vec<CodeCount>,
    summary: Summary,
}

/// `{"statistics": [{"code", "lint", "count", "confirmed", "not_shown",
/// "undecided", "refuted"}],
/// "summary": {"files", "errors", "warnings"}}`, pretty-printed, with a
/// final newline.
pub fn statistics_json(reports: &[FileReport]) -> String {
    let document = StatisticsDocument {
        statistics: statistics(reports),
        summary: Summary::of(reports),
    };
    super::pretty_json(&document)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::reports;

    #[test]
    fn counts_by_code_with_each_verdict() {
        let mut reports = reports();
        // More I001: one not shown, one undecided, one without a witness
        // (never replayed), and one refuted (`--show-refuted`).
        let confirmed = reports[0].diagnostics[1].clone();
        let with = |verdict| {
            let mut d = confirmed.clone();
            d.verdict = verdict;
            d
        };
        let mut unreplayed = with(None);
        unreplayed.witness.clear();
        reports[0].diagnostics.extend([
            with(Some(Verdict::NotShown)),
            with(Some(Verdict::Undecided)),
            unreplayed,
        ]);
        let rows = statistics(&reports);
        let summary: Vec<_> = rows
            .iter()
            .map(|r| (r.code, r.count, r.confirmed, r.not_shown, r.undecided))
            .collect();
        assert_eq!(
            summary,
            [
                ("I001", 4, 1, 1, 1),
                ("E001", 1, 0, 0, 0),
                ("I007", 1, 0, 0, 0)
            ]
        );
        assert_eq!(
            statistics_table(&rows),
            "count  code  name                   confirmed  not shown  undecided\n    4  I001  self-accepting-event           1          1          1\n    1  E001  syntax-error                   0          0          0\n    1  I007  retention-below-retry          0          0          0\n"
        );
        reports[0].diagnostics.push(with(Some(Verdict::Refuted)));
        let rows = statistics(&reports);
        assert_eq!(rows[0].refuted, 1);
        assert!(
            statistics_table(&rows).starts_with(
                "count  code  name                   confirmed  not shown  undecided  refuted\n    5  I001  self-accepting-event           1          1          1        1\n"
            ),
            "{}",
            statistics_table(&rows)
        );
    }

    #[test]
    fn nothing_found_prints_no_table() {
        assert_eq!(statistics_table(&[]), "");
        let value: serde_json::Value = serde_json::from_str(&statistics_json(&[])).unwrap();
        assert_eq!(value["statistics"], serde_json::json!([]));
        assert_eq!(value["summary"]["files"], 0);
    }
}
