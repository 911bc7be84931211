//! Pest errors → one readable diagnostic.
//!
//! Pest says which grammar rules it expected at the furthest position it
//! reached. Those names mean nothing to an author, so each becomes words
//! ("`->`", "an expression"), and the message says what came before and what
//! was found instead: "expected `->`, `if` or `{` after `on PAGO`, found `!`".

use pest::error::{Error, ErrorVariant, InputLocation};

use super::Rule;
use crate::diagnostic::{Diagnostic, LoadError, did_you_mean};
use crate::span::Span;

/// Words that start an item at the top level or in a state body.
const ITEM_KEYWORDS: [&str; 22] = [
    "migration",
    "state",
    "parallel",
    "final",
    "history",
    "initial",
    "entry",
    "exit",
    "on",
    "always",
    "after",
    "invoke",
    "tags",
    "allow",
    "context",
    "source",
    "dedup",
    "limits",
    "event",
    "effect",
    "guards",
    "semantics",
];

/// Every reserved word of the DSL (the `keyword` rule of chart.pest).
pub(super) const KEYWORDS: [&str; 35] = [
    "migration",
    "machine",
    "version",
    "context",
    "source",
    "retry",
    "dedup",
    "retention",
    "event",
    "idempotent",
    "id",
    "from",
    "effect",
    "guards",
    "verify",
    "initial",
    "state",
    "parallel",
    "final",
    "history",
    "entry",
    "exit",
    "on",
    "always",
    "after",
    "reenter",
    "if",
    "assign",
    "raise",
    "send",
    "cancel",
    "log",
    "allow",
    "tags",
    "invoke",
];

pub(super) fn syntax_error(error: &Error<Rule>, text: &str) -> Diagnostic {
    let at = match error.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    }
    .min(text.len());
    let found = Found::at(text, at);
    // `on A if GUARD -> b`: the guard took `-` for a subtraction and failed at `>`.
    let arrow = text[..at].trim_end();
    if found.text == ">" && arrow.ends_with('-') {
        let at = arrow.len() - 1;
        let mut diagnostic = LoadError::Syntax {
            message: format!(
                "unexpected `->`{}: targets come before `if`",
                after(&preceding(text, at))
            ),
        }
        .at(Span::new(at, at + 2), []);
        diagnostic.help = Some("write `on EVENT -> TARGET if GUARD`".into());
        return diagnostic;
    }
    let (message, help) = match &error.variant {
        ErrorVariant::ParsingError { positives, .. } => explain(positives, text, at),
        // Pest stops with a custom error only when it runs out of stack.
        ErrorVariant::CustomError { message } => (
            format!("the file is nested too deeply to read ({message})"),
            None,
        ),
    };
    let mut diagnostic = LoadError::Syntax { message }.at(Span::new(at, at + found.len), []);
    diagnostic.help = help;
    diagnostic
}

/// What stands at the error position.
struct Found<'a> {
    text: &'a str,
    len: usize,
}

impl<'a> Found<'a> {
    fn at(text: &'a str, at: usize) -> Found<'a> {
        let rest = &text[at..];
        let Some(first) = rest.chars().next() else {
            return Found { text: "", len: 0 };
        };
        let len = if first.is_ascii_alphanumeric() || first == '_' {
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len())
        } else if first == '"' {
            // A string up to its closing quote on the same line, if any.
            rest[1..].find(['"', '\n']).map_or(rest.len(), |i| {
                i + 1 + usize::from(rest[1 + i..].starts_with('"'))
            })
        } else if rest.starts_with("->") {
            2
        } else {
            first.len_utf8()
        };
        Found {
            text: &rest[..len],
            len,
        }
    }

    fn is_end(&self) -> bool {
        self.text.is_empty()
    }

    fn is_word(&self) -> bool {
        self.text
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
    }

    /// For a message: `` `stat` `` or "the end of the file", long tokens cut.
    fn describe(&self) -> String {
        if self.is_end() {
            return "the end of the file".into();
        }
        let shown: String = self.text.chars().take(24).collect();
        let ellipsis = if shown.len() < self.text.len() {
            "…"
        } else {
            ""
        };
        format!("`{shown}{ellipsis}`")
    }
}

fn explain(positives: &[Rule], text: &str, at: usize) -> (String, Option<String>) {
    let found = Found::at(text, at);
    let before = preceding(text, at);
    let expects = |rule: Rule| positives.contains(&rule);
    let expects_name = positives.iter().any(|r| {
        matches!(
            r,
            Rule::name
                | Rule::segment
                | Rule::event_name
                | Rule::target
                | Rule::pattern
                | Rule::descriptor
                | Rule::event_word
                | Rule::context_field
                | Rule::payload_field
                | Rule::argument
        )
    });
    let expects_item = expects(Rule::top_item) || expects(Rule::state_item);

    if found.is_end() && (expects(Rule::header) || expects(Rule::kw_machine)) {
        return (
            "the file is empty: a machine file starts with `machine NAME`".into(),
            None,
        );
    }
    if expects(Rule::header) || expects(Rule::kw_machine) {
        return (
            format!(
                "a machine file starts with `machine NAME`, found {}",
                found.describe()
            ),
            None,
        );
    }
    if expects_name && found.is_word() && KEYWORDS.contains(&found.text) {
        return (
            format!(
                "expected a name{}, found the keyword `{}`",
                after(&before),
                found.text
            ),
            Some(format!(
                "write `` `{0}` `` to use `{0}` as a name",
                found.text
            )),
        );
    }
    // A `}` where an item could have started, but no block to close.
    if found.text == "}" && expects(Rule::EOI) && !expects(Rule::close) {
        return (
            format!("unexpected `}}`{}: no block is open here", after(&before)),
            None,
        );
    }

    let expected = expected_words(positives, found.is_word());
    if expects_item && found.is_word() && !KEYWORDS.contains(&found.text) {
        let help = did_you_mean(found.text, ITEM_KEYWORDS).map(|k| format!("did you mean `{k}`?"));
        return (
            format!(
                "unknown word `{}`: expected {}{}",
                found.text,
                expected,
                after(&before)
            ),
            help,
        );
    }
    // A string runs to the end of its line at most, so one without its closing
    // quote there is what the author has to fix, whatever was expected.
    let unclosed_string =
        found.text.starts_with('"') && (found.text.len() == 1 || !found.text.ends_with('"'));
    let help = if unclosed_string {
        Some("this string is not closed: end it with `\"` on the same line".to_string())
    } else if before.split_whitespace().rev().nth(1) == Some("allow") {
        Some("`allow` needs a reason: say in a string why the lint does not apply here".to_string())
    } else if found.is_end() && expects(Rule::close) {
        Some("a block opened with `{` is not closed".to_string())
    } else if found.text == "(" && expects(Rule::equals) {
        Some(
            "to pass arguments, write `effect NAME(field: value)` or `raise EVENT(field: value)`"
                .to_string(),
        )
    } else if expects_item && found.text.starts_with('"') {
        Some("a description goes at the end of the line it describes, before any `{`".to_string())
    } else {
        None
    };
    (
        format!(
            "expected {}{}, found {}",
            expected,
            after(&before),
            found.describe()
        ),
        help,
    )
}

fn after(before: &str) -> String {
    if before.is_empty() {
        String::new()
    } else {
        format!(" after `{before}`")
    }
}

/// "`->`, `if` or `{`": the expected rules in words, each once, the parts of
/// the current item first and "a new item" or "the end of the file" last.
fn expected_words(positives: &[Rule], found_word: bool) -> String {
    let mut words: Vec<String> = Vec::new();
    for rule in positives {
        if let Some(word) = describe(*rule)
            && !words.contains(&word)
        {
            words.push(word);
        }
    }
    // A description or one more name is possible after many items, and rarely
    // what was meant when something else than a word stands there.
    if words.len() > 4 && !found_word {
        words.retain(|w| !matches!(w.as_str(), "a string" | "a name" | "an event name"));
    }
    words.sort_by_key(|w| rank(w));
    match words.split_last() {
        None => "something else".into(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

fn rank(word: &str) -> u8 {
    match word {
        "a target state" | "an event name" | "a name" => 0,
        "`->`" => 1,
        "`reenter`" => 2,
        "`if`" => 2,
        "`{`" => 4,
        "a string" => 5,
        "a new item" => 6,
        "`}`" => 7,
        "the end of the file" => 8,
        _ => 3,
    }
}

fn describe(rule: Rule) -> Option<String> {
    let word = match rule {
        Rule::header | Rule::kw_machine => "`machine NAME`",
        Rule::version => "`version`",
        Rule::integer => "a whole number",
        Rule::top_item | Rule::state_item => "a new item",
        Rule::context_field => "a context field (`name = value`)",
        Rule::name | Rule::segment | Rule::word | Rule::quoted | Rule::quoted_text => "a name",
        Rule::type_name => "a type such as `string`",
        Rule::idempotency_kind => "`key`, `natural` or `none`",
        Rule::event_name | Rule::event_word | Rule::pattern | Rule::descriptor => "an event name",
        Rule::target => "a target state",
        Rule::targets | Rule::handler_targets | Rule::arrow => "`->`",
        Rule::retry => "`retry`",
        Rule::retention => "`retention`",
        Rule::payload | Rule::arguments | Rule::lparen => "`(`",
        Rule::id_field => "`id`",
        Rule::event_source => "`from`",
        Rule::idempotency => "`idempotent`",
        Rule::verify => "`verify`",
        Rule::state_id => "`#id`",
        Rule::history_kind => "`deep` or `shallow`",
        Rule::state_body | Rule::action_block | Rule::open => "`{`",
        Rule::close => "`}`",
        Rule::rparen => "`)`",
        Rule::comma => "`,`",
        Rule::colon => "`:`",
        Rule::equals => "`=`",
        Rule::reenter => "`reenter`",
        Rule::guard => "`if`",
        Rule::description | Rule::string | Rule::e_string => "a string",
        Rule::reason => "the reason, a string",
        Rule::action | Rule::single_action => "an action",
        Rule::argument | Rule::payload_field => "a field (`name: ...`)",
        Rule::lint_name | Rule::lint_word => "a lint name",
        Rule::duration => "a duration such as `30s`",
        Rule::EOI => "the end of the file",
        Rule::state_decl | Rule::state_kind => "`state`",
        Rule::history_decl => "`history`",
        Rule::initial_decl => "`initial`",
        Rule::entry_decl => "`entry`",
        Rule::exit_decl => "`exit`",
        Rule::on_decl => "`on`",
        Rule::always_decl => "`always`",
        Rule::after_decl => "`after`",
        Rule::invoke_decl => "`invoke`",
        Rule::invoke_id => "`id`",
        Rule::invoke_body => "`{`",
        Rule::invoke_handler => "a `done` or `error` handler",
        Rule::tags_decl => "`tags`",
        Rule::allow_decl => "`allow`",
        Rule::semantics_decl => "`semantics`",
        Rule::context_block => "`context`",
        Rule::source_decl => "`source`",
        Rule::dedup_decl => "`dedup`",
        Rule::history_keep_decl => "`history keep`",
        Rule::kw_keep => "`keep`",
        Rule::limits_decl => "`limits`",
        Rule::migration_decl | Rule::kw_migration => "`migration`",
        Rule::migration_body => "`{`",
        Rule::migration_item => "`state`, `context`, `timers`, `history` or `outbox`",
        Rule::carry => "`keep` or `drop`",
        Rule::event_decl => "`event`",
        Rule::effect_decl => "`effect`",
        Rule::guards_decl => "`guards`",
        Rule::assign_block => "`assign`",
        Rule::assign_field => "`name = value`",
        Rule::raise_action => "`raise`",
        Rule::send_action => "`send`",
        Rule::cancel_action => "`cancel`",
        Rule::send_delay => "`after`",
        Rule::send_id => "`id`",
        Rule::effect_action => "`effect`",
        Rule::log_action => "`log`",
        Rule::named_action => "an action name",
        other => {
            let name = format!("{other:?}");
            if let Some(keyword) = name.strip_prefix("kw_") {
                return Some(format!("`{keyword}`"));
            }
            if name == "expression" || name == "expr_main" || name.starts_with("e_") {
                return Some("an expression".into());
            }
            return None;
        }
    };
    Some(word.to_string())
}

/// The text just before the error: the rest of its line, or the last line
/// with something on it, without comments, at most 40 characters.
fn preceding(text: &str, at: usize) -> String {
    let mut end = at;
    loop {
        let line_start = text[..end].rfind('\n').map_or(0, |i| i + 1);
        let line = strip_comment(&text[line_start..end]).trim();
        if !line.is_empty() || line_start == 0 {
            let chars: Vec<char> = line.chars().collect();
            if chars.len() > 40 {
                let tail: String = chars[chars.len() - 39..].iter().collect();
                return format!("…{}", tail.trim_start());
            }
            return line.to_string();
        }
        end = line_start - 1;
    }
}

/// A line without its `//` comment (a `//` inside a string is no comment).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut escaped = false;
    let mut previous_slash = false;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => {
                if c == '"' || c == '\'' {
                    quote = Some(c);
                } else if c == '/' && previous_slash {
                    return &line[..i - 1];
                }
            }
        }
        previous_slash = quote.is_none() && c == '/';
    }
    line
}
