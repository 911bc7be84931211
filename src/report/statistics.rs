//! Findings counted by code, as ruff's `--statistics` does: the table at the
//! end of the human report, and all that `idemchart lint --statistics`
//! prints (as text, or as a JSON object with `--format json`).

use serde::Serialize;

use super::{FileReport, Summary};

/// The findings of one code in a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CodeCount {
    pub code: &'static str,
    pub lint: &'static str,
    pub count: usize,
    /// Findings whose witness the replay confirmed (`confirmed: true`).
    pub confirmed: usize,
    /// Findings with a witness that the replay could not decide
    /// (`confirmed: null`); a finding without a witness was never replayed,
    /// so it is neither confirmed nor undecided.
    pub undecided: usize,
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
                    undecided: 0,
                });
                rows.len() - 1
            }
        };
        let row = &mut rows[index];
        row.count += 1;
        match d.confirmed {
            Some(true) => row.confirmed += 1,
            None if !d.witness.is_empty() => row.undecided += 1,
            _ => {}
        }
    }
    rows.sort_by(|a, b| b.count.cmp(&a.count).then(a.code.cmp(b.code)));
    rows
}

/// The table for people: a header, then one aligned row per code; nothing
/// when nothing was found.
pub fn statistics_table(rows: &[CodeCount]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let name_width = rows.iter().map(|r| r.lint.len()).max().unwrap_or(0);
    let code_width = rows.iter().map(|r| r.code.len()).max().unwrap_or(0);
    let line = |count: &str, code: &str, name: &str, confirmed: &str, undecided: &str| {
        format!(
            "{count:>5}  {code:<code_width$}  {name:<name_width$}  {confirmed:>9}  {undecided:>9}\n"
        )
    };
    let mut out = line("count", "code", "name", "confirmed", "undecided");
    for r in rows {
        out.push_str(&line(
            &r.count.to_string(),
            r.code,
            r.lint,
            &r.confirmed.to_string(),
            &r.undecided.to_string(),
        ));
    }
    out
}

#[derive(Serialize)]
struct StatisticsDocument {
    statistics: Vec<CodeCount>,
    summary: Summary,
}

/// `{"statistics": [{"code", "lint", "count", "confirmed", "undecided"}],
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
    fn counts_by_code_with_confirmed_and_undecided() {
        let mut reports = reports();
        // A second I001 whose replay could not decide, and one without a
        // witness, which was never replayed.
        let mut undecided = reports[0].diagnostics[1].clone();
        undecided.confirmed = None;
        let mut unreplayed = undecided.clone();
        unreplayed.witness.clear();
        reports[0].diagnostics.extend([undecided, unreplayed]);
        let rows = statistics(&reports);
        let summary: Vec<_> = rows
            .iter()
            .map(|r| (r.code, r.count, r.confirmed, r.undecided))
            .collect();
        assert_eq!(
            summary,
            [("I001", 3, 1, 1), ("E001", 1, 0, 0), ("I007", 1, 0, 0)]
        );
        assert_eq!(
            statistics_table(&rows),
            "count  code  name                   confirmed  undecided\n    3  I001  self-accepting-event           1          1\n    1  E001  syntax-error                   0          0\n    1  I007  retention-below-retry          0          0\n"
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
