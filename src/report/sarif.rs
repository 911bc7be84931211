//! SARIF 2.1.0, as GitHub code scanning accepts it: one run, every lint as a
//! rule, one result per diagnostic with its region, the labels as related
//! locations and the witness as a code flow.
//!
//! Paths are written as given on the command line (relative ones stay
//! relative, which GitHub reads from the repository root), and columns
//! count Unicode characters (`columnKind: unicodeCodePoints`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{FileReport, Region, portable_path};
use crate::config::LintInfo;
use crate::diagnostic::{Applicability, Fix};
use crate::diagnostic::{Diagnostic, Severity, Verdict};
use crate::span::SourceFile;

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// GitHub cuts rule descriptions longer than this.
const DESCRIPTION_LIMIT: usize = 1024;

#[derive(Serialize)]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    tool: Tool,
    results: Results<'a>,
    column_kind: &'static str,
}

#[derive(Serialize)]
struct Tool {
    driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver {
    name: &'static str,
    semantic_version: &'static str,
    rules: Vec<Rule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: String,
    name: String,
    short_description: Text,
    full_description: Text,
    help: Help,
    default_configuration: Configuration,
    properties: RuleProperties,
}

#[derive(Serialize)]
struct Text {
    text: String,
}

#[derive(Serialize)]
struct Help {
    text: String,
    markdown: String,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
struct RuleProperties {
    tags: Vec<&'static str>,
    #[serde(rename = "problem.severity")]
    problem_severity: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    rule_id: String,
    rule_index: usize,
    level: &'static str,
    message: Text,
    locations: Vec<Location>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<Location>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    code_flows: Vec<CodeFlow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    properties: Option<ResultProperties>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fixes: Vec<SarifFix>,
}

/// A proposed fix: the replacements in the finding's file.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifFix {
    description: Text,
    artifact_changes: Vec<ArtifactChange>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactChange {
    artifact_location: ArtifactLocation,
    replacements: Vec<Replacement>,
}

/// The text of `deleted_region` (empty for an insertion) becomes the
/// inserted content.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Replacement {
    deleted_region: SarifRegion,
    #[serde(skip_serializing_if = "Option::is_none")]
    inserted_content: Option<Text>,
}

#[derive(Serialize)]
struct ResultProperties {
    witness: Vec<String>,
    /// `confirmed`, `refuted`, `not-shown` or `undecided`.
    #[serde(skip_serializing_if = "Option::is_none")]
    verdict: Option<&'static str>,
    /// `true` when confirmed, `false` when refuted (as before `verdict`).
    #[serde(skip_serializing_if = "Option::is_none")]
    confirmed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    replay: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    physical_location: PhysicalLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Text>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    region: SarifRegion,
}

#[derive(Serialize)]
struct ArtifactLocation {
    uri: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifRegion {
    start_line: usize,
    start_column: usize,
    end_line: usize,
    end_column: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CodeFlow {
    thread_flows: Vec<ThreadFlow>,
}

#[derive(Serialize)]
struct ThreadFlow {
    locations: Vec<ThreadFlowLocation>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ThreadFlowLocation {
    location: Location,
    execution_order: usize,
}

/// The SARIF log of a run: `lints` become the rules (load errors found in the
/// run are added as rules of their own), every diagnostic a result.
pub fn sarif(reports: &[FileReport], lints: &[LintInfo]) -> String {
    super::to_text(|out| write_sarif(reports, lints, out))
}

/// `sarif`, written to `out` as it is made: each result is made when it is
/// written, so that a large run's log is never held whole.
pub fn write_sarif(
    reports: &[FileReport],
    lints: &[LintInfo],
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut rules: Vec<Rule> = lints.iter().map(lint_rule).collect();
    let mut index: BTreeMap<String, usize> = rules
        .iter()
        .enumerate()
        .map(|(i, rule)| (rule.id.clone(), i))
        .collect();
    // The rules come before the results in the log: the load errors' rules
    // are added first, in the order the results name them.
    for d in reports.iter().flat_map(|r| &r.diagnostics) {
        index.entry(d.code.to_string()).or_insert_with(|| {
            rules.push(load_error_rule(d));
            rules.len() - 1
        });
    }
    let log = Log {
        schema: SCHEMA,
        version: "2.1.0",
        runs: [Run {
            tool: Tool {
                driver: Driver {
                    name: "idemchart",
                    semantic_version: env!("CARGO_PKG_VERSION"),
                    rules,
                },
            },
            results: Results {
                reports,
                index: &index,
            },
            column_kind: "unicodeCodePoints",
        }],
    };
    super::write_pretty_json(&log, out)
}

/// Every diagnostic of the reports as a result, made as it is written;
/// `index` is each code's rule.
struct Results<'a> {
    reports: &'a [FileReport],
    index: &'a BTreeMap<String, usize>,
}

impl Serialize for Results<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.reports.iter().flat_map(|report| {
            let uri = uri(&portable_path(&report.file.path));
            report
                .diagnostics
                .iter()
                .map(move |d| result(d, &report.file, &uri, self.index[d.code]))
        }))
    }
}

/// The result of one diagnostic of `file`, whose rule is `rule_index`.
fn result(d: &Diagnostic, file: &SourceFile, uri: &str, rule_index: usize) -> SarifResult {
    let place = |span, message: Option<String>, id| Location {
        id,
        physical_location: PhysicalLocation {
            artifact_location: ArtifactLocation {
                uri: uri.to_string(),
            },
            region: region(Region::of(span, file)),
        },
        message: message.map(|text| Text { text }),
    };
    let related_locations = d
        .labels
        .iter()
        .enumerate()
        .map(|(i, label)| place(label.span, Some(label.message.clone()), Some(i + 1)))
        .collect();
    // Diagnostics carry no position for each step of the witness, so
    // every step points at the finding and says which event it is.
    let steps = d.witness.len();
    // I008's last step is a retry, every other witness's a repeat.
    let last = if d.code == crate::lint::Lint::RetryWithoutVerification.code() {
        "the retried delivery"
    } else {
        "the repeated delivery"
    };
    let code_flows = if steps == 0 {
        Vec::new()
    } else {
        let locations = d
            .witness
            .iter()
            .enumerate()
            .map(|(i, event)| {
                let text = if i + 1 == steps {
                    format!("{}. {event}: {last}", i + 1)
                } else {
                    format!("{}. {event}", i + 1)
                };
                ThreadFlowLocation {
                    location: place(d.span, Some(text), None),
                    execution_order: i + 1,
                }
            })
            .collect();
        vec![CodeFlow {
            thread_flows: vec![ThreadFlow { locations }],
        }]
    };
    SarifResult {
        rule_id: d.code.to_string(),
        rule_index,
        level: level(d.severity),
        message: Text {
            text: message_text(d),
        },
        locations: vec![place(d.span, None, None)],
        related_locations,
        code_flows,
        properties: (!d.witness.is_empty() || d.verdict.is_some()).then(|| ResultProperties {
            witness: d.witness.clone(),
            verdict: d.verdict.map(Verdict::as_str),
            confirmed: Verdict::confirmed(d.verdict),
            replay: d.replay.clone(),
        }),
        fixes: d.fix.iter().map(|fix| sarif_fix(fix, uri, file)).collect(),
    }
}

fn lint_rule(lint: &LintInfo) -> Rule {
    let what = what_it_does(lint.doc);
    let short = first_sentence(&what);
    Rule {
        id: lint.code.to_string(),
        name: lint.name.to_string(),
        short_description: Text {
            text: limit(if short.is_empty() { lint.name } else { short }),
        },
        full_description: Text {
            text: limit(if what.is_empty() { lint.name } else { &what }),
        },
        help: Help {
            text: limit(if lint.doc.trim().is_empty() {
                lint.name
            } else {
                lint.doc.trim()
            }),
            markdown: lint.doc.trim().to_string(),
        },
        default_configuration: Configuration {
            level: level(lint.default_severity),
        },
        properties: properties(lint.code, lint.default_severity),
    }
}

/// The rule for a load error, which has no documentation of its own.
fn load_error_rule(d: &Diagnostic) -> Rule {
    let text = format!(
        "The machine file does not load ({}), so nothing else in it is linted.",
        d.name
    );
    Rule {
        id: d.code.to_string(),
        name: d.name.to_string(),
        short_description: Text {
            text: format!("The machine file does not load: {}", d.name),
        },
        full_description: Text { text: text.clone() },
        help: Help {
            markdown: text.clone(),
            text,
        },
        default_configuration: Configuration { level: "error" },
        properties: properties(d.code, Severity::Error),
    }
}

fn properties(code: &str, severity: Severity) -> RuleProperties {
    let tag = if code.starts_with('I') {
        "idempotency"
    } else {
        "correctness"
    };
    RuleProperties {
        tags: vec![tag],
        problem_severity: level(severity),
    }
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// A fix as SARIF proposes one; an unsafe one says so in its description.
fn sarif_fix(fix: &Fix, uri: &str, file: &SourceFile) -> SarifFix {
    let text = match fix.applicability {
        Applicability::Safe => fix.message.clone(),
        Applicability::Unsafe => format!("{} (unsafe: review it before applying)", fix.message),
    };
    let replacements = fix
        .edits
        .iter()
        .map(|edit| Replacement {
            deleted_region: region(Region::exact(edit.span, file)),
            inserted_content: (!edit.replacement.is_empty()).then(|| Text {
                text: edit.replacement.clone(),
            }),
        })
        .collect();
    SarifFix {
        description: Text { text },
        artifact_changes: vec![ArtifactChange {
            artifact_location: ArtifactLocation {
                uri: uri.to_string(),
            },
            replacements,
        }],
    }
}

fn region(region: Region) -> SarifRegion {
    SarifRegion {
        start_line: region.start_line,
        start_column: region.start_column,
        end_line: region.end_line,
        end_column: region.end_column,
    }
}

/// The message, then the help as a sentence of its own; GitHub titles the
/// alert with the first sentence.
fn message_text(d: &Diagnostic) -> String {
    match &d.help {
        Some(help) => format!("{}. Help: {help}", d.message),
        None => d.message.clone(),
    }
}

/// The first paragraph under the doc's "What it does" heading, or the doc's
/// first paragraph when it has no such heading, on one line.
fn what_it_does(doc: &str) -> String {
    let lines: Vec<&str> = doc.lines().map(str::trim).collect();
    let start = lines
        .iter()
        .position(|line| line.starts_with('#') && line.to_lowercase().contains("what it does"))
        .map_or(0, |i| i + 1);
    lines[start..]
        .iter()
        .skip_while(|line| line.is_empty() || line.starts_with('#'))
        .take_while(|line| !line.is_empty() && !line.starts_with('#'))
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(end) => &text[..=end],
        None => text,
    }
}

/// `text` cut to GitHub's limit on a character boundary.
fn limit(text: &str) -> String {
    if text.chars().count() <= DESCRIPTION_LIMIT {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(DESCRIPTION_LIMIT - 1).collect();
    cut.push('…');
    cut
}

/// A path as a URI reference: characters other than the unreserved ones and
/// `/` are percent-encoded (a `:` would otherwise read as a scheme), and an
/// absolute path becomes a `file://` URI.
pub(crate) fn uri(path: &str) -> String {
    let mut out = String::new();
    if path.starts_with('/') {
        out.push_str("file://");
    }
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(byte as char)
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{REGISTRY, reports};

    #[test]
    fn sarif_log_snapshot() {
        insta::with_settings!({filters => vec![(r#""semanticVersion": "[^"]*""#, r#""semanticVersion": "[version]""#)]}, {
            insta::assert_snapshot!(sarif(&reports(), REGISTRY));
        });
    }

    /// The OASIS schema (errata 01, draft-04), vendored with its source.
    const SCHEMA_TEXT: &str = include_str!("../../tests/data/sarif-schema-2.1.0.json");

    pub(crate) fn schema_errors(log: &str) -> Vec<String> {
        let schema: serde_json::Value = serde_json::from_str(SCHEMA_TEXT).unwrap();
        let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
        let log: serde_json::Value = serde_json::from_str(log).expect("the log is JSON");
        validator
            .iter_errors(&log)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect()
    }

    #[test]
    fn sarif_log_is_valid_against_the_schema() {
        assert_eq!(
            schema_errors(&sarif(&reports(), REGISTRY)),
            Vec::<String>::new()
        );
        assert_eq!(schema_errors(&sarif(&[], REGISTRY)), Vec::<String>::new());
    }

    #[test]
    fn the_schema_catches_what_it_should() {
        // A region starting at line 0 is invalid; the validator must say so,
        // or the test above proves nothing.
        let mut log: serde_json::Value =
            serde_json::from_str(&sarif(&reports(), REGISTRY)).unwrap();
        log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] =
            0.into();
        let log = log.to_string();
        assert!(!schema_errors(&log).is_empty());
    }

    #[test]
    fn rules_cover_the_registry_and_the_load_errors_seen() {
        let log: serde_json::Value = serde_json::from_str(&sarif(&reports(), REGISTRY)).unwrap();
        let driver = &log["runs"][0]["tool"]["driver"];
        let ids: Vec<_> = driver["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["I001", "I007", "E001"]);
        assert_eq!(
            driver["rules"][0]["shortDescription"]["text"],
            "Flags a transition on an event that leads to a configuration where the same event is taken again."
        );
        for result in log["runs"][0]["results"].as_array().unwrap() {
            let index = result["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(driver["rules"][index]["id"], result["ruleId"]);
        }
    }

    #[test]
    fn uris_are_relative_references_with_escapes() {
        assert_eq!(uri("machines/pedido.yaml"), "machines/pedido.yaml");
        assert_eq!(uri("a b/c:d%.yaml"), "a%20b/c%3Ad%25.yaml");
        assert_eq!(
            uri("/srv/máquinas/x.yaml"),
            "file:///srv/m%C3%A1quinas/x.yaml"
        );
    }

    #[test]
    fn long_descriptions_are_cut_for_github() {
        let long = "x".repeat(2000);
        let cut = limit(&long);
        assert_eq!(cut.chars().count(), DESCRIPTION_LIMIT);
        assert!(cut.ends_with('…'));
        assert_eq!(limit("short"), "short");
    }

    #[test]
    fn what_it_does_reads_the_section_or_the_first_paragraph() {
        assert_eq!(
            what_it_does("# I001\n\n### What it does\nFlags it.\nTwice.\n\n### Why\nNo."),
            "Flags it. Twice."
        );
        assert_eq!(what_it_does("Flags it.\n\nMore."), "Flags it.");
        assert_eq!(first_sentence("One. Two."), "One.");
    }
}
