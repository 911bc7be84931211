//! Lint levels: the `idemchart.toml` file, its per-path overrides, and the
//! `--deny`/`--warn`/`--allow` flags.
//!
//! ```toml
//! [lints]
//! self-accepting-event = "deny"   # a name or a code: I001 = "deny"
//! warnings = "deny"               # every finding left at warn becomes an error
//!
//! [[overrides]]
//! paths = ["machines/legacy/**"]  # globs relative to the directory of this file
//! [overrides.lints]
//! cycle-reenables-event = "allow"
//! ```
//!
//! The same file says where to look for machines and what XState machines
//! cannot say themselves (`docs/xstate.md`):
//!
//! ```toml
//! include = ["src/**"]            # directory searches take only these paths
//! exclude = ["**/*.test.ts"]      # and never these
//!
//! [xstate]
//! version = "v4"                  # machines whose API does not tell
//!
//! [machines.checkout]             # by machine id: the machine format's keys
//! xstate = "v5"
//! events = { PAY = { id = "paymentId" } }
//! effects = { chargeCard = { idempotency = "key" } }
//! ```
//!
//! Resolution, later wins: the lint's default level, then `[lints]`, then each
//! `[[overrides]]` whose `paths` match the file, in file order, then the flags
//! in command-line order. `warnings` is resolved the same way and applied last
//! to whatever is left at `warn`: `deny` makes it an error, `allow` drops it.
//! Levels apply to lint findings only; a file that does not load is an error
//! whatever the configuration says, since nothing in it could be linted.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use toml::Spanned;

use crate::diagnostic::{Diagnostic, Severity, did_you_mean};
use crate::span::SourceFile;

/// The name of the configuration file.
pub const FILE_NAME: &str = "idemchart.toml";

/// The name that stands for every finding at warn level.
pub const WARNINGS: &str = "warnings";

/// What the configuration and the reports need to know of one lint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LintInfo {
    /// Stable code, `I001`.
    pub code: &'static str,
    /// Stable kebab-case name, `self-accepting-event`.
    pub name: &'static str,
    pub default_severity: Severity,
    /// Markdown: What it does / Why is this bad / Example / Use instead.
    pub doc: &'static str,
    /// Whether loading reports it: such a file does not load, so its level
    /// cannot be configured.
    pub reported_by_loading: bool,
}

/// What the configuration and the reports need to know of every lint.
pub fn registry() -> Vec<LintInfo> {
    crate::lint::Lint::ALL
        .iter()
        .map(|&lint| LintInfo {
            code: lint.code(),
            name: lint.name(),
            default_severity: lint.default_severity(),
            doc: lint.doc(),
            reported_by_loading: lint.reported_by_loading(),
        })
        .collect()
}

/// The lint named by `text`, a code or a name, in any letter case.
pub fn find_lint<'a>(registry: &'a [LintInfo], text: &str) -> Option<&'a LintInfo> {
    registry
        .iter()
        .find(|lint| lint.code.eq_ignore_ascii_case(text) || lint.name.eq_ignore_ascii_case(text))
}

/// The message for a lint name that names nothing, with a "did you mean"
/// among the registry and `also`.
pub fn unknown_lint_message(registry: &[LintInfo], text: &str, also: &[&str]) -> String {
    let candidates = registry
        .iter()
        .flat_map(|lint| [lint.name, lint.code])
        .chain(also.iter().copied());
    match did_you_mean(text, candidates) {
        Some(close) => format!("unknown lint `{text}`; did you mean `{close}`?"),
        None => format!("unknown lint `{text}`"),
    }
}

/// How a finding is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Not reported.
    Allow,
    /// Reported as a warning.
    Warn,
    /// Reported as an error: the run fails.
    Deny,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Allow => "allow",
            Level::Warn => "warn",
            Level::Deny => "deny",
        }
    }

    /// The level a severity stands for; a note is reported as a warning
    /// is, only more quietly.
    pub fn of(severity: Severity) -> Level {
        match severity {
            Severity::Note | Severity::Warning => Level::Warn,
            Severity::Error => Level::Deny,
        }
    }
}

/// What a setting applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// One lint, by its code.
    Lint(&'static str),
    /// Every finding that is left at warn level.
    Warnings,
}

impl Target {
    /// The target named by `text` (a lint code or name, or `warnings`), or
    /// the usage error to report.
    pub fn parse(registry: &[LintInfo], text: &str) -> Result<Target, String> {
        if text.eq_ignore_ascii_case(WARNINGS) {
            return Ok(Target::Warnings);
        }
        let lint = find_lint(registry, text)
            .ok_or_else(|| unknown_lint_message(registry, text, &[WARNINGS]))?;
        if lint.reported_by_loading {
            return Err(format!(
                "`{text}` ({} {}) is reported when a file does not load, and a file that does not load cannot be linted: its level cannot be changed",
                lint.code, lint.name
            ));
        }
        Ok(Target::Lint(lint.code))
    }
}

/// One `name = "level"` line, or one flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    pub target: Target,
    pub level: Level,
}

/// One `[[overrides]]` table.
#[derive(Debug)]
struct Override {
    paths: GlobSet,
    lints: Vec<Setting>,
}

/// The lint levels in force for one run.
#[derive(Debug)]
pub struct Config {
    /// The file the configuration came from, if any.
    pub file: Option<PathBuf>,
    /// The directory override paths are relative to.
    root: PathBuf,
    lints: Vec<Setting>,
    overrides: Vec<Override>,
    flags: Vec<Setting>,
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
    /// What XState machines cannot say themselves.
    pub xstate: crate::import::xstate::Settings,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    lints: BTreeMap<Spanned<String>, Spanned<Level>>,
    #[serde(default)]
    overrides: Vec<RawOverride>,
    include: Option<Spanned<Vec<Spanned<String>>>>,
    exclude: Option<Spanned<Vec<Spanned<String>>>>,
    xstate: Option<RawXstate>,
    #[serde(default)]
    machines: BTreeMap<String, RawMachine>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawXstate {
    version: Option<crate::import::xstate::Version>,
}

/// `[machines.ID]`: the version, and the machine format's top-level facts.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMachine {
    xstate: Option<crate::import::xstate::Version>,
    #[serde(default)]
    events: indexmap::IndexMap<String, crate::import::xstate::facts::EventFact>,
    #[serde(default)]
    effects: indexmap::IndexMap<String, crate::import::xstate::facts::EffectFact>,
    #[serde(default)]
    sources: indexmap::IndexMap<String, crate::import::xstate::facts::SourceFact>,
    dedup: Option<crate::import::xstate::facts::DedupFact>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOverride {
    paths: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    lints: BTreeMap<Spanned<String>, Spanned<Level>>,
}

impl Config {
    /// No file: every lint at its default level, relative paths taken from
    /// `root`.
    pub fn defaults(root: PathBuf) -> Config {
        Config {
            file: None,
            root,
            lints: Vec::new(),
            overrides: Vec::new(),
            flags: Vec::new(),
            include: None,
            exclude: None,
            xstate: Default::default(),
        }
    }

    /// Whether a file that a directory search found is to be read:
    /// `include` (when given) names it and `exclude` does not.
    pub fn searches(&self, path: &Path) -> bool {
        let Some(relative) = self.relative(path) else {
            return self.include.is_none();
        };
        self.include.as_ref().is_none_or(|g| g.is_match(&relative))
            && !self.exclude.as_ref().is_some_and(|g| g.is_match(&relative))
    }

    /// The nearest `idemchart.toml` in `dir` or one of its ancestors, as a
    /// path relative to `dir` (`idemchart.toml`, `../idemchart.toml`), so
    /// that messages about it stay short.
    pub fn discover(dir: &Path) -> Option<PathBuf> {
        let mut up = PathBuf::new();
        for ancestor in dir.ancestors() {
            if ancestor.join(FILE_NAME).is_file() {
                return Some(up.join(FILE_NAME));
            }
            up.push("..");
        }
        None
    }

    /// Reads and checks a configuration file; override paths are relative to
    /// the directory that holds it. The error is a message with a position.
    pub fn load(path: &Path, registry: &[LintInfo]) -> Result<Config, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let absolute = absolute(path);
        let root = absolute
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| absolute.clone());
        let file = SourceFile::new(path.display().to_string(), text);
        let mut config = Config::parse(&file, root, registry)?;
        config.file = Some(path.to_path_buf());
        Ok(config)
    }

    /// Checks configuration text; `root` is the directory override paths
    /// are relative to.
    pub fn parse(
        file: &SourceFile,
        root: PathBuf,
        registry: &[LintInfo],
    ) -> Result<Config, String> {
        let at = |span: std::ops::Range<usize>, message: &str| {
            let (line, column) = file.line_col(span.start as u32);
            format!("{}:{line}:{column}: {message}", file.path)
        };
        let raw: RawConfig = toml::from_str(&file.text).map_err(|e| match e.span() {
            Some(span) => at(span, e.message().trim_end()),
            None => format!("{}: {}", file.path, e.message().trim_end()),
        })?;
        let settings = |table: &BTreeMap<Spanned<String>, Spanned<Level>>| {
            let mut settings: Vec<(Setting, &Spanned<String>)> = Vec::new();
            for (key, level) in table {
                let target = Target::parse(registry, key.get_ref())
                    .map_err(|message| at(key.span(), &message))?;
                if let Some((_, earlier)) = settings.iter().find(|(s, _)| s.target == target) {
                    return Err(at(
                        key.span(),
                        &format!(
                            "`{}` and `{}` name the same lint",
                            earlier.get_ref(),
                            key.get_ref()
                        ),
                    ));
                }
                let setting = Setting {
                    target,
                    level: *level.get_ref(),
                };
                settings.push((setting, key));
            }
            Ok::<_, String>(settings.into_iter().map(|(s, _)| s).collect::<Vec<_>>())
        };
        let lints = settings(&raw.lints)?;
        let globs =
            |list: &Option<Spanned<Vec<Spanned<String>>>>| -> Result<Option<GlobSet>, String> {
                let Some(list) = list else {
                    return Ok(None);
                };
                let mut set = GlobSetBuilder::new();
                for pattern in list.get_ref() {
                    let glob = GlobBuilder::new(pattern.get_ref())
                        .literal_separator(true)
                        .build()
                        .map_err(|e| at(pattern.span(), &format!("invalid path pattern: {e}")))?;
                    set.add(glob);
                }
                set.build()
                    .map(Some)
                    .map_err(|e| at(list.span(), &e.to_string()))
            };
        let include = globs(&raw.include)?;
        let exclude = globs(&raw.exclude)?;
        let xstate = crate::import::xstate::Settings {
            version: raw.xstate.and_then(|x| x.version),
            machines: raw
                .machines
                .into_iter()
                .map(|(id, m)| {
                    let facts = crate::import::xstate::Facts {
                        events: m.events,
                        effects: m.effects,
                        sources: m.sources,
                        dedup: m.dedup,
                    };
                    (
                        id,
                        crate::import::xstate::MachineSettings {
                            xstate: m.xstate,
                            facts,
                        },
                    )
                })
                .collect(),
        };
        let mut overrides = Vec::new();
        for raw_override in &raw.overrides {
            if raw_override.paths.get_ref().is_empty() {
                return Err(at(
                    raw_override.paths.span(),
                    "an override needs at least one path",
                ));
            }
            let mut paths = GlobSetBuilder::new();
            for pattern in raw_override.paths.get_ref() {
                // `*` stays within one directory and `**` crosses them, as in
                // .gitignore; a pattern matches the whole relative path.
                let glob = GlobBuilder::new(pattern.get_ref())
                    .literal_separator(true)
                    .build()
                    .map_err(|e| at(pattern.span(), &format!("invalid path pattern: {e}")))?;
                paths.add(glob);
            }
            let paths = paths
                .build()
                .map_err(|e| at(raw_override.paths.span(), &e.to_string()))?;
            overrides.push(Override {
                paths,
                lints: settings(&raw_override.lints)?,
            });
        }
        Ok(Config {
            file: None,
            root,
            lints,
            overrides,
            flags: Vec::new(),
            include,
            exclude,
            xstate,
        })
    }

    /// Adds command-line settings; they come after everything in the file.
    pub fn with_flags(mut self, flags: impl IntoIterator<Item = Setting>) -> Config {
        self.flags.extend(flags);
        self
    }

    /// The findings of the file at `path` at their configured severity, the
    /// allowed ones left out, and those another covers folded into it
    /// (`lint::fold_covered`).
    pub fn apply(&self, path: &Path, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        let relative = self.relative(path);
        let mut found: Vec<Diagnostic> = diagnostics
            .into_iter()
            .filter_map(|mut diagnostic| {
                let severity =
                    self.severity(relative.as_deref(), diagnostic.code, diagnostic.severity)?;
                // A finding the replay did not show stays a note at any
                // level its lint is given (`docs/lint.md`): CI does not
                // fail on it. Allowing the lint still hides it.
                let not_shown = diagnostic.verdict == Some(crate::diagnostic::Verdict::NotShown)
                    && diagnostic.severity == Severity::Note;
                if !not_shown {
                    diagnostic.severity = severity;
                }
                Some(diagnostic)
            })
            .collect();
        // After the levels, so that a lint given a level of its own, or
        // allowed, is never hidden inside another.
        let level = |code: &str| self.severity(relative.as_deref(), code, Severity::Warning);
        crate::lint::fold_covered(&mut found, |minor, major| level(minor) == level(major));
        found
    }

    /// The severity of a finding of lint `code` (reported at `default`) in the
    /// file at `relative` (relative to the configuration's directory, with `/`
    /// separators; `None` outside it, where no override applies), or `None`
    /// when it is allowed.
    pub fn severity(
        &self,
        relative: Option<&str>,
        code: &str,
        default: Severity,
    ) -> Option<Severity> {
        let matching = self
            .overrides
            .iter()
            .filter(|o| relative.is_some_and(|path| o.paths.is_match(path)))
            .flat_map(|o| &o.lints);
        let mut level = Level::of(default);
        let mut warnings = Level::Warn;
        let mut set = false;
        for setting in self.lints.iter().chain(matching).chain(&self.flags) {
            match setting.target {
                Target::Lint(c) if c == code => {
                    level = setting.level;
                    set = true;
                }
                Target::Warnings => warnings = setting.level,
                Target::Lint(_) => {}
            }
        }
        // A note stays a note, which `warnings` does not touch, until its
        // own lint is given a level.
        if default == Severity::Note && !set {
            return Some(Severity::Note);
        }
        if level == Level::Warn {
            level = warnings;
        }
        match level {
            Level::Allow => None,
            Level::Warn => Some(Severity::Warning),
            Level::Deny => Some(Severity::Error),
        }
    }

    /// `path` relative to the configuration's directory, with `/` separators,
    /// if it lies inside it.
    pub fn relative(&self, path: &Path) -> Option<String> {
        let path = resolved(path);
        let root = resolved(&self.root);
        let inside = path.strip_prefix(&root).ok()?;
        let parts: Vec<_> = inside
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        Some(parts.join("/"))
    }
}

/// `path` made absolute against the current directory.
fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|dir| dir.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

/// `path` absolute with symbolic links resolved when it exists, and with `.`
/// and `..` removed by hand when it does not, so that the file and the root
/// compare alike.
fn resolved(path: &Path) -> PathBuf {
    let path = absolute(path);
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    clean
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::Span;

    /// Lint descriptions for the tests; the real registry lives in `lint`.
    const REGISTRY: &[LintInfo] = &[
        LintInfo {
            code: "I001",
            name: "self-accepting-event",
            default_severity: Severity::Warning,
            doc: "",
            reported_by_loading: false,
        },
        LintInfo {
            code: "I003",
            name: "cycle-reenables-event",
            default_severity: Severity::Warning,
            doc: "",
            reported_by_loading: false,
        },
        LintInfo {
            code: "I007",
            name: "retention-below-retry",
            default_severity: Severity::Error,
            doc: "",
            reported_by_loading: false,
        },
        LintInfo {
            code: "S001",
            name: "unknown-target",
            default_severity: Severity::Error,
            doc: "",
            reported_by_loading: true,
        },
    ];

    fn root() -> PathBuf {
        PathBuf::from("/nonexistent/project")
    }

    fn config(text: &str) -> Result<Config, String> {
        Config::parse(&SourceFile::new(FILE_NAME, text), root(), REGISTRY)
    }

    fn flag(text: &str, level: Level) -> Setting {
        Setting {
            target: Target::parse(REGISTRY, text).expect("a known lint"),
            level,
        }
    }

    fn finding(code: &'static str, severity: Severity) -> Diagnostic {
        Diagnostic {
            code,
            name: "",
            severity,
            message: String::new(),
            span: Span::default(),
            labels: Vec::new(),
            help: None,
            witness: Vec::new(),
            verdict: None,
            replay: None,
            fix: None,
        }
    }

    #[test]
    fn defaults_keep_each_lint_at_its_own_level() {
        let config = Config::defaults(root());
        assert_eq!(
            config.severity(Some("a.yaml"), "I001", Severity::Warning),
            Some(Severity::Warning)
        );
        assert_eq!(
            config.severity(Some("a.yaml"), "I007", Severity::Error),
            Some(Severity::Error)
        );
    }

    #[test]
    fn names_and_codes_both_set_levels() {
        let config =
            config("[lints]\nself-accepting-event = \"deny\"\ni003 = \"allow\"\n").unwrap();
        assert_eq!(
            config.severity(None, "I001", Severity::Warning),
            Some(Severity::Error)
        );
        assert_eq!(config.severity(None, "I003", Severity::Warning), None);
    }

    #[test]
    fn overrides_beat_the_file_and_flags_beat_overrides() {
        let text = "[lints]\nI001 = \"deny\"\n\n[[overrides]]\npaths = [\"machines/legacy/**\"]\n[overrides.lints]\nI001 = \"allow\"\n";
        let config = config(text).unwrap();
        let legacy = Some("machines/legacy/old/pedido.yaml");
        let current = Some("machines/pedido.yaml");
        assert_eq!(config.severity(legacy, "I001", Severity::Warning), None);
        assert_eq!(
            config.severity(current, "I001", Severity::Warning),
            Some(Severity::Error)
        );
        let config = config.with_flags([flag("I001", Level::Warn)]);
        assert_eq!(
            config.severity(legacy, "I001", Severity::Warning),
            Some(Severity::Warning)
        );
        assert_eq!(
            config.severity(current, "I001", Severity::Warning),
            Some(Severity::Warning)
        );
    }

    #[test]
    fn later_overrides_win_and_single_stars_stay_in_one_directory() {
        let text = "[[overrides]]\npaths = [\"machines/*.yaml\"]\n[overrides.lints]\nI003 = \"deny\"\n\n[[overrides]]\npaths = [\"**/legacy/*\"]\n[overrides.lints]\nI003 = \"allow\"\n";
        let config = config(text).unwrap();
        assert_eq!(
            config.severity(Some("machines/a.yaml"), "I003", Severity::Warning),
            Some(Severity::Error)
        );
        assert_eq!(
            config.severity(Some("machines/legacy/a.yaml"), "I003", Severity::Warning),
            None
        );
        assert_eq!(
            config.severity(Some("machines/other/a.yaml"), "I003", Severity::Warning),
            Some(Severity::Warning)
        );
        assert_eq!(
            config.severity(None, "I003", Severity::Warning),
            Some(Severity::Warning),
            "files outside the configuration's directory take no override"
        );
    }

    #[test]
    fn later_flags_win_over_earlier_ones() {
        let config = Config::defaults(root()).with_flags([
            flag("I001", Level::Allow),
            flag("self-accepting-event", Level::Deny),
        ]);
        assert_eq!(
            config.severity(None, "I001", Severity::Warning),
            Some(Severity::Error)
        );
        let config = Config::defaults(root())
            .with_flags([flag("I001", Level::Deny), flag("I001", Level::Allow)]);
        assert_eq!(config.severity(None, "I001", Severity::Warning), None);
    }

    #[test]
    fn deny_warnings_raises_every_warning_but_not_allowed_lints() {
        let config = Config::defaults(root())
            .with_flags([flag("I003", Level::Allow), flag("warnings", Level::Deny)]);
        assert_eq!(
            config.severity(None, "I001", Severity::Warning),
            Some(Severity::Error)
        );
        assert_eq!(config.severity(None, "I003", Severity::Warning), None);
        assert_eq!(
            config.severity(None, "I007", Severity::Error),
            Some(Severity::Error)
        );
    }

    #[test]
    fn warnings_in_the_file_can_be_reset_by_a_flag() {
        let config = config("[lints]\nwarnings = \"deny\"\n").unwrap();
        assert_eq!(
            config.severity(None, "I001", Severity::Warning),
            Some(Severity::Error)
        );
        let config = config.with_flags([flag("warnings", Level::Warn)]);
        assert_eq!(
            config.severity(None, "I001", Severity::Warning),
            Some(Severity::Warning)
        );
    }

    #[test]
    fn apply_drops_allowed_findings_and_sets_severities() {
        let text = "[[overrides]]\npaths = [\"legacy/**\"]\n[overrides.lints]\nI001 = \"allow\"\nI003 = \"deny\"\n";
        let config = config(text).unwrap();
        let found = vec![
            finding("I001", Severity::Warning),
            finding("I003", Severity::Warning),
        ];
        let kept = config.apply(&root().join("legacy/a.yaml"), found.clone());
        assert_eq!(kept.len(), 1);
        assert_eq!((kept[0].code, kept[0].severity), ("I003", Severity::Error));
        let kept = config.apply(&root().join("current/a.yaml"), found);
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn relative_paths_ignore_dot_segments() {
        let config = Config::defaults(root());
        assert_eq!(
            config
                .relative(&root().join("machines/./legacy/../a.yaml"))
                .as_deref(),
            Some("machines/a.yaml")
        );
        assert_eq!(config.relative(Path::new("/elsewhere/a.yaml")), None);
    }

    #[test]
    fn unknown_lints_are_errors_with_a_suggestion_and_a_position() {
        let error = config("[lints]\nself-acepting-event = \"deny\"\n").unwrap_err();
        assert_eq!(
            error,
            "idemchart.toml:2:1: unknown lint `self-acepting-event`; did you mean `self-accepting-event`?"
        );
        let error =
            config("[[overrides]]\npaths = [\"a/**\"]\n[overrides.lints]\nwarnigns = \"deny\"\n")
                .unwrap_err();
        assert_eq!(
            error,
            "idemchart.toml:4:1: unknown lint `warnigns`; did you mean `warnings`?"
        );
        assert!(
            Target::parse(REGISTRY, "unknown-target")
                .unwrap_err()
                .contains("its level cannot be changed")
        );
        assert_eq!(
            Target::parse(REGISTRY, "I01"),
            Err("unknown lint `I01`; did you mean `I001`?".to_string())
        );
    }

    #[test]
    fn bad_levels_keys_and_patterns_are_errors_with_a_position() {
        let error = config("[lints]\nI001 = \"dney\"\n").unwrap_err();
        assert!(
            error.starts_with("idemchart.toml:2:8: unknown variant `dney`"),
            "{error}"
        );
        let error = config("[lint]\nI001 = \"deny\"\n").unwrap_err();
        assert!(
            error.starts_with("idemchart.toml:1:2: unknown field `lint`"),
            "{error}"
        );
        let error = config("[[overrides]]\npaths = [\"a/[b\"]\n").unwrap_err();
        assert!(
            error.starts_with("idemchart.toml:2:10: invalid path pattern"),
            "{error}"
        );
        let error = config("[[overrides]]\npaths = []\n").unwrap_err();
        assert_eq!(
            error,
            "idemchart.toml:2:9: an override needs at least one path"
        );
        let error =
            config("[lints]\nI001 = \"deny\"\nself-accepting-event = \"allow\"\n").unwrap_err();
        assert!(error.ends_with("name the same lint"), "{error}");
    }
}
