//! `idemchart lint` and `idemchart explain`.
//!
//! Levels come from the nearest `idemchart.toml` (the current directory or
//! one of its ancestors) or from `--config FILE`, then from the `--deny`,
//! `--warn` and `--allow` flags in the order they were given; see
//! `idemchart::config` for the rules.

use std::collections::HashSet;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{ArgMatches, Args, ValueEnum};

use idemchart::config::{
    Config, Level, LintInfo, Setting, Target, find_lint, registry, unknown_lint_message,
};
use idemchart::load::{self, FileKind, Resolver};
use idemchart::report::{self, FileReport, Reach, Summary};
use idemchart::{Machine, SourceFile, fix};

use super::baseline::Baseline;
use super::{
    Color, CommandResult, candidates, errln, finish, load_candidate, out, out_with, outln,
};

#[derive(Args)]
pub struct LintArgs {
    /// Files or directories. Directories are walked as ripgrep walks them
    /// (past what .gitignore and .ignore leave out, hidden files and
    /// node_modules) for the files that hold a machine: YAML and JSON whose
    /// top level has `machine:` or `states:`, *.chart, *.scxml, and scripts
    /// that import `xstate` or `@xstate/*`; the other files are passed over
    /// and counted. A file named here that holds no machine is an error.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// How to print the findings, on standard output: for people, or as
    /// JSON, SARIF 2.1.0 or GitHub Actions commands.
    #[arg(long, value_enum, default_value_t = LintFormat::Human)]
    format: LintFormat,
    /// Report this lint (code or name) as an error; `--deny warnings` turns
    /// every warning into an error. Repeatable; later flags win.
    #[arg(long, value_name = "LINT")]
    deny: Vec<String>,
    /// Report this lint (code or name) as a warning. Repeatable.
    #[arg(long, value_name = "LINT")]
    warn: Vec<String>,
    /// Do not report this lint (code or name). Repeatable.
    #[arg(long, value_name = "LINT")]
    allow: Vec<String>,
    /// Read lint levels from this file instead of the nearest idemchart.toml.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Colour the human output: auto (on a terminal), always or never.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
    /// Also show the graph hazards proved impossible (`verdict: refuted`),
    /// with the proof.
    #[arg(long)]
    show_refuted: bool,
    /// Print only the findings counted by code (count, code, name, and by
    /// verdict: confirmed, not shown, undecided), on standard output: a
    /// table, or a JSON object with `--format json`. The exit status is the
    /// same as without it.
    #[arg(long)]
    statistics: bool,
    /// Apply the safe fixes and write the files back; the findings left are
    /// then reported as usual.
    #[arg(long)]
    fix: bool,
    /// With `--fix` or `--diff`, apply the unsafe fixes too: they change what
    /// the machine or the runtime does, so review them.
    #[arg(long)]
    unsafe_fixes: bool,
    /// Print the fixes as a unified diff on standard output and write
    /// nothing; the exit status is 1 when there is a diff, 0 when there is
    /// none.
    #[arg(long, conflicts_with_all = ["fix", "statistics"])]
    diff: bool,
    /// Also report the breaking changes (M lints) for the processes stored
    /// under an older version of each machine: a machine file (with one
    /// path), or a git revision (`HEAD~1`) at which each file is read at
    /// its own path, with `git show` in the file's repository.
    #[arg(long, value_name = "FILE|REV")]
    baseline: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum LintFormat {
    Human,
    Json,
    Sarif,
    Github,
}

/// Lints the machine files named by `args`; `matches` are the parsed lint
/// arguments, which know in what order the level flags came.
pub fn lint(args: &LintArgs, matches: Option<&ArgMatches>) -> CommandResult {
    let registry = registry();
    let flags = level_flags(args, matches, &registry)?;
    let config = match &args.config {
        Some(path) => Config::load(path, &registry)?,
        None => {
            let here = std::env::current_dir()
                .map_err(|e| format!("cannot read the current directory: {e}"))?;
            match Config::discover(&here) {
                Some(path) => Config::load(&path, &registry)?,
                None => Config::defaults(here),
            }
        }
    }
    .with_flags(flags);
    if args.diff && !matches!(args.format, LintFormat::Human) {
        return Err("`--diff` prints a diff: it takes no `--format`".into());
    }
    if args.statistics && !matches!(args.format, LintFormat::Human | LintFormat::Json) {
        return Err(
            "`--statistics` prints a table or a JSON object: use it with `--format human` or `--format json`"
                .into(),
        );
    }

    let baseline = args.baseline.as_deref().map(Baseline::parse);
    if let Some(Baseline::File(old)) = &baseline
        && !matches!(args.paths.as_slice(), [one] if one.is_file())
    {
        return Err(format!(
            "`--baseline {}` is a file: compare it with one machine file, or give a git revision",
            old.display()
        )
        .into());
    }

    let options = idemchart::lint::Options {
        show_refuted: args.show_refuted,
    };
    // The breaking changes are found against the old machine where there
    // is one, among the findings of the file itself.
    let lint_file =
        |path: &Path, file: &SourceFile, machine: &Arc<Machine>, old: Option<&Machine>| {
            let mut found = idemchart::lint::lint_source_shared(machine, file, &options, None)
                .unwrap_or_default();
            if let Some(old) = old {
                found.extend(idemchart::lint::lint_change(old, machine, Some(file)));
                found.sort_by(|a, b| (a.span.start, a.code).cmp(&(b.span.start, b.code)));
            }
            config.apply(path, found)
        };
    let mut reports: Vec<FileReport> = Vec::new();
    let mut fixes = Fixes::default();
    let mut resolver = Resolver::default();
    // What the summary counts: the machines read, and the files passed
    // over because they hold none.
    let mut reach = Reach::default();
    // The XState JSON configs a walk finds are linted after the scripts: a
    // config that a script of the run makes its machine of (`import
    // definition from './order.json'`, `engine.createMachine(definition)`)
    // is linted there, with the implementations the script gives it, and
    // not a second time on its own without them. Each keeps its place in
    // the report (`reports[slot]`, empty until then).
    let mut deferred: Vec<(usize, idemchart::import::xstate::Loaded)> = Vec::new();
    let mut read_through: HashSet<PathBuf> = HashSet::new();
    let lint_into = |reports: &mut Vec<FileReport>, loaded: &idemchart::import::xstate::Loaded| {
        // A machine that does not load has only its load errors, which no
        // level changes (levels apply to lint findings only); a file may
        // hold several machines, each linted on its own.
        let by_file = idemchart::lint::lint_loaded(loaded, &options, None).unwrap_or_default();
        for (file, found) in by_file {
            let found = config.apply(std::path::Path::new(&file.path), found);
            match reports.iter_mut().find(|r| r.file.path == file.path) {
                Some(report) => {
                    let mut all = std::mem::take(&mut report.diagnostics);
                    all.extend(found);
                    *report = FileReport::new(file, all);
                }
                None => reports.push(FileReport::new(file, found)),
            }
        }
    };
    for candidate in candidates(&args.paths, &config)? {
        let path = candidate.path.clone();
        let kind = FileKind::of_path(&path);
        // Our own syntaxes (one machine a file) are linted with their fixes;
        // SCXML documents and XState sources through their importers, as
        // written.
        if let None | Some(FileKind::Machine(_)) = kind {
            let read =
                load::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let shown = match &read {
                Ok(file) | Err((file, _)) => file,
            };
            let none = kind.and_then(|kind| load::holds_machine(shown, kind, &mut resolver).err());
            if let Some(none) = none {
                if candidate.named {
                    reports.push(FileReport::new(shown.clone(), vec![none.diagnostic()]));
                } else {
                    reach.without_machine += 1;
                }
                continue;
            }
            reach.machines += 1;
            let old = match &baseline {
                Some(baseline) => baseline.machine_for(&path)?,
                None => None,
            };
            let old = old.as_ref();
            let (file, diagnostics) = match read {
                // Text that is not UTF-8 was read with replacement characters:
                // it is reported, never written back.
                Err((file, not_utf8)) => (file, vec![not_utf8]),
                Ok(file) if args.fix || args.diff => {
                    let outcome = fix::fix_file(&file, args.unsafe_fixes, |f, m| {
                        lint_file(&path, f, &Arc::new(m.clone()), old)
                    });
                    fixes.record(&file, &outcome, args.diff);
                    let fixed = SourceFile::new(file.path.clone(), outcome.text);
                    if args.fix && fixed.text != file.text {
                        std::fs::write(&path, &fixed.text)
                            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                    }
                    (fixed, outcome.diagnostics)
                }
                // A file that does not load has only its load errors, which no
                // level changes: nothing else in it could be linted.
                Ok(file) => {
                    let diagnostics = match load::load(&file) {
                        Ok(machine) => lint_file(&path, &file, &Arc::new(machine), old),
                        Err(load_errors) => load_errors,
                    };
                    (file, diagnostics)
                }
            };
            reports.push(FileReport::new(file, diagnostics));
            continue;
        }
        // A baseline file names one machine file of our own formats; the
        // sources read as written are compared with no baseline (a revision
        // passes them by, as docs/lint.md says).
        if let (Some(Baseline::File(old)), true) = (&baseline, candidate.named) {
            return Err(format!(
                "`--baseline {}` compares machine files (YAML, DSL); {} is read as written, without a baseline",
                old.display(),
                path.display()
            )
            .into());
        }
        let Some(loaded) = load_candidate(&candidate, &config, &mut resolver)? else {
            reach.without_machine += 1;
            continue;
        };
        read_through.extend(
            loaded
                .sources
                .files()
                .skip(1)
                .filter_map(|f| std::fs::canonicalize(&f.path).ok()),
        );
        // Named on the command line, or fixed in place, it is linted now.
        if !(candidate.named || args.fix || args.diff)
            && kind
                == Some(FileKind::Xstate(
                    idemchart::import::xstate::SourceKind::Json,
                ))
        {
            let main = loaded.sources.main().clone();
            deferred.push((reports.len(), loaded));
            reports.push(FileReport::new(main, Vec::new()));
            continue;
        }
        reach.machines += loaded.machines.len();
        // An XState source of one machine, all in the file, is fixed as our
        // own syntaxes are, with its notes among the findings.
        if (args.fix || args.diff)
            && idemchart::lint::fixable_in_place(&loaded)
            && idemchart::import::xstate::SourceKind::of_path(&path).is_some()
        {
            let file = loaded.sources.main().clone();
            let outcome = idemchart::lint::fix_xstate(
                &file,
                &config.xstate,
                args.unsafe_fixes,
                &options,
                |found| config.apply(&path, found),
            );
            fixes.record(&file, &outcome, args.diff);
            let fixed = SourceFile::new(file.path.clone(), outcome.text);
            if args.fix && fixed.text != file.text {
                std::fs::write(&path, &fixed.text)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            }
            reports.push(FileReport::new(fixed, outcome.diagnostics));
            continue;
        }
        lint_into(&mut reports, &loaded);
    }
    let mut read_elsewhere = Vec::new();
    for (slot, loaded) in deferred {
        let main = std::fs::canonicalize(&loaded.sources.main().path);
        if main.is_ok_and(|p| read_through.contains(&p)) {
            read_elsewhere.push(slot);
            continue;
        }
        reach.machines += loaded.machines.len();
        lint_into(&mut reports, &loaded);
    }
    for slot in read_elsewhere.into_iter().rev() {
        reports.remove(slot);
    }
    for reverted in &fixes.reverted {
        errln(reverted);
    }
    if args.diff {
        let code = if fixes.files > 0 {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        };
        let written = out(&fixes.diff);
        errln(fixes.summary("would fix"));
        return finish(code, written);
    }

    let code = if Summary::of(&reports).errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    let written = match args.format {
        LintFormat::Human if args.statistics => {
            out(report::statistics_table(&report::statistics(&reports)))
        }
        LintFormat::Json if args.statistics => out(report::statistics_json(&reports)),
        LintFormat::Human => {
            let color = match args.color {
                Color::Auto => std::io::stdout().is_terminal(),
                Color::Always => true,
                Color::Never => false,
            };
            out_with(|stdout| {
                report::write_human(&reports, reach, color, args.unsafe_fixes, stdout)
            })
        }
        LintFormat::Json => out_with(|stdout| report::write_json(&reports, stdout)),
        LintFormat::Sarif => out_with(|stdout| report::write_sarif(&reports, &registry, stdout)),
        LintFormat::Github => out(report::github(&reports, args.unsafe_fixes)),
    };
    // What `--fix` did ends the report for people; the tables and the
    // formats for programs keep standard output to themselves.
    let written = match (args.fix, args.format, args.statistics) {
        (false, ..) => written,
        (true, LintFormat::Human, false) => written.and_then(|()| outln(fixes.summary("fixed"))),
        (true, ..) => {
            errln(fixes.summary("fixed"));
            written
        }
    };
    finish(code, written)
}

/// What `--fix` or `--diff` did to the files of a run.
#[derive(Default)]
struct Fixes {
    /// Findings whose fix was applied.
    findings: usize,
    /// Files whose text changed.
    files: usize,
    /// The unified diff of every changed file, for `--diff`.
    diff: String,
    /// One warning per fix left out because the file would not load after it.
    reverted: Vec<String>,
}

impl Fixes {
    fn record(&mut self, file: &SourceFile, outcome: &fix::Outcome, diff: bool) {
        if outcome.text != file.text {
            self.files += 1;
            self.findings += outcome.fixed;
            if diff {
                let path = &file.path;
                let text = similar::TextDiff::from_lines(&file.text, &outcome.text)
                    .unified_diff()
                    .header(path, path)
                    .to_string();
                self.diff.push_str(&text);
            }
        }
        for r in &outcome.reverted {
            let (line, column) = r.file.line_col(r.span.start);
            self.reverted.push(format!(
                "warning: not applied: the fix of {} at {}:{line}:{column} ({}) would make the file fail to load: {}",
                r.code, r.file.path, r.message, r.error
            ));
        }
    }

    /// `fixed 3 findings in 2 files`.
    fn summary(&self, verb: &str) -> String {
        let plural = |n: usize, noun: &str| match n {
            1 => format!("{n} {noun}"),
            _ => format!("{n} {noun}s"),
        };
        format!(
            "{verb} {} in {}",
            plural(self.findings, "finding"),
            plural(self.files, "file")
        )
    }
}

/// The `--deny`, `--warn` and `--allow` flags in command-line order, so that
/// a later flag wins over an earlier one whichever its kind.
fn level_flags(
    args: &LintArgs,
    matches: Option<&ArgMatches>,
    registry: &[LintInfo],
) -> Result<Vec<Setting>, String> {
    let kinds = [
        ("deny", &args.deny, Level::Deny),
        ("warn", &args.warn, Level::Warn),
        ("allow", &args.allow, Level::Allow),
    ];
    let mut given: Vec<(usize, &str, Level)> = Vec::new();
    for (rank, (id, values, level)) in kinds.into_iter().enumerate() {
        // Without the parsed matches the order across kinds is unknown; deny,
        // warn, allow is then the fallback.
        let indices: Vec<usize> = match matches.and_then(|m| m.indices_of(id)) {
            Some(indices) => indices.collect(),
            None => (0..values.len()).map(|i| rank * 10_000 + i).collect(),
        };
        given.extend(
            indices
                .into_iter()
                .zip(values)
                .map(|(index, value)| (index, value.as_str(), level)),
        );
    }
    given.sort_by_key(|(index, ..)| *index);
    given
        .into_iter()
        .map(|(_, text, level)| {
            Target::parse(registry, text).map(|target| Setting { target, level })
        })
        .collect()
}

/// Prints the documentation of one lint, named by code or name.
pub fn explain(name: &str) -> CommandResult {
    let registry = registry();
    let lint = find_lint(&registry, name)
        .ok_or_else(|| super::Failure::from(unknown_lint_message(&registry, name, &[])))?;
    outln(format_args!(
        "{} {} ({} by default)\n\n{}",
        lint.code,
        lint.name,
        match lint.default_severity {
            idemchart::Severity::Note => "note",
            other => Level::of(other).as_str(),
        },
        lint.doc.trim_end()
    ))?;
    Ok(ExitCode::SUCCESS)
}
