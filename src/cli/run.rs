//! `idemchart run`: drive a machine with JSON-lines events.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use idemchart::expr::{Event, Value};
use idemchart::interp::{Actor, Chart, SnapshotJsonError, Step, Unsettled};
use idemchart::model::Duration;

use super::{CommandResult, Failure, errln, load_to_run, outln};

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum RunFormat {
    Json,
    Text,
}

pub struct RunArgs {
    pub machine: PathBuf,
    pub events: PathBuf,
    pub format: RunFormat,
    pub snapshot_in: Option<PathBuf>,
    pub snapshot_out: Option<PathBuf>,
}

/// One line of the events input.
enum Input {
    Event(Event),
    Advance(u64),
}

pub fn run(args: RunArgs) -> CommandResult {
    let Some(machine) = load_to_run(&args.machine)? else {
        return Ok(ExitCode::from(1));
    };
    let chart = Arc::new(Chart::new(machine));
    let mut actor = match &args.snapshot_in {
        Some(path) => {
            let text = read(path)?;
            let actor = Actor::restore_json(Arc::clone(&chart), &text).map_err(|e| match e {
                SnapshotJsonError::Syntax {
                    message,
                    line,
                    column,
                } => format!("{}:{line}:{column}: {message}", path.display()),
                SnapshotJsonError::Restore(e) => format!("{}: {e}", path.display()),
            })?;
            print_state(&actor, None, "(restored)", args.format)?;
            actor
        }
        None => {
            let actor = Actor::new(Arc::clone(&chart));
            if let Err(unsettled) = actor.last_step().settled() {
                return report_unsettled(unsettled, "the start", args.format);
            }
            print_state(&actor, Some(actor.last_step()), "(start)", args.format)?;
            actor
        }
    };

    let events_name = args.events.display().to_string();
    let reader: Box<dyn BufRead> = if args.events == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        let file = std::fs::File::open(&args.events)
            .map_err(|e| format!("cannot read {events_name}: {e}"))?;
        Box::new(std::io::BufReader::new(file))
    };
    for (number, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| format!("cannot read {events_name}: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let input = match parse_input(&line, &chart) {
            Ok(input) => input,
            Err((column, message)) => {
                errln(format_args!(
                    "error: {events_name}:{}:{column}: {message}",
                    number + 1
                ));
                return Ok(ExitCode::from(1));
            }
        };
        let label = match input {
            Input::Event(event) => {
                actor.send(&event);
                String::new()
            }
            Input::Advance(millis) => {
                let to = actor.now() + millis;
                actor.advance_to(to);
                format!("(advance {})", Duration::from_millis(millis))
            }
        };
        if let Err(unsettled) = actor.last_step().settled() {
            let place = format!("{events_name}:{}", number + 1);
            return report_unsettled(unsettled, &place, args.format);
        }
        print_state(&actor, Some(actor.last_step()), &label, args.format)?;
    }
    if let Some(path) = &args.snapshot_out {
        let text = serde_json::to_string_pretty(&actor.snapshot()).map_err(|e| e.to_string())?;
        write_atomically(path, &text)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Writes through a temporary file and a rename, so a crash never leaves a
/// half-written snapshot.
fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let result = std::fs::File::create(&tmp)
        .and_then(|mut f| {
            f.write_all(text.as_bytes())
                .and_then(|_| f.write_all(b"\n"))
                .and_then(|_| f.sync_all())
        })
        .and_then(|_| std::fs::rename(&tmp, path));
    result.map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Reads one input line; an error comes with the 1-based column it is at.
fn parse_input(line: &str, chart: &Chart) -> Result<Input, (usize, String)> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| (e.column(), strip_position(&e)))?;
    let serde_json::Value::Object(object) = value else {
        return Err((
            1,
            "expected an object: {\"type\": ...} or {\"advance\": \"200ms\"}".into(),
        ));
    };
    if let Some(advance) = object.get("advance") {
        let text = advance.as_str().unwrap_or_default();
        return Duration::parse(text)
            .map(|d| Input::Advance(d.millis))
            .ok_or((
                1,
                format!(
                    "invalid duration {advance}: write a whole number followed by ms, s, m, h or d"
                ),
            ));
    }
    for key in object.keys() {
        if !["type", "id", "data"].contains(&key.as_str()) {
            return Err((
                1,
                format!("unknown key `{key}`: an event has `type`, `id` and `data`"),
            ));
        }
    }
    let Some(name) = object.get("type").and_then(|t| t.as_str()) else {
        return Err((1, "an event needs a string `type`".into()));
    };
    let data = object.get("data").map(Value::from).unwrap_or(Value::Null);
    if data != Value::Null && data.as_map().is_none() {
        return Err((1, "`data` must be an object".into()));
    }
    // The id is given, or read from the payload field the event declares.
    let id = object.get("id").map(Value::from).or_else(|| {
        let field = chart.machine().events.get(name)?.id_field.as_ref()?;
        data.get(&field.text).cloned()
    });
    Ok(Input::Event(Event::new(name, id, data)))
}

/// Reports a step that did not settle, which stops the run: one line that
/// says so on standard output, the message on standard error naming
/// `place` (the input line, or the start), and exit status 1. The actor
/// stopped half-way through the step, so no state is printed or written.
fn report_unsettled(unsettled: &Unsettled, place: &str, format: RunFormat) -> CommandResult {
    match format {
        RunFormat::Json => {
            let line = serde_json::json!({
                "event": unsettled.event.as_deref(),
                "error": "unsettled",
                "message": unsettled.to_string(),
                "microsteps": unsettled.limit,
                "states": unsettled.paths,
                "events": unsettled.events,
            });
            outln(line)?;
        }
        RunFormat::Text => {
            let what = unsettled.event.as_deref().unwrap_or("(step)");
            outln(format_args!("{what}: error: did not settle"))?;
        }
    }
    errln(format_args!("error: {place}: {unsettled}"));
    Ok(ExitCode::from(1))
}

/// Prints the actor after a step; `label` names a step that had no event in
/// the text format.
fn print_state(
    actor: &Actor,
    step: Option<&Step>,
    label: &str,
    format: RunFormat,
) -> Result<(), Failure> {
    let chart = actor.chart();
    let machine = chart.machine();
    let configuration: Vec<&str> = actor
        .configuration()
        .map(|s| machine.display_name(s))
        .collect();
    let effects: Vec<serde_json::Value> = step
        .map(|step| {
            step.effects
                .iter()
                .map(|e| {
                    let mut effect =
                        serde_json::json!({ "effect": &*e.name, "position": e.position });
                    if e.args != Value::Null {
                        effect["args"] = e.args.to_json();
                    }
                    if e.host {
                        effect["host"] = true.into();
                    }
                    effect
                })
                .collect()
        })
        .unwrap_or_default();
    let invoked: Vec<serde_json::Value> = step
        .map(|step| {
            step.invoked
                .iter()
                .map(|i| {
                    let mut invoked = serde_json::json!({ "id": &*i.id, "src": &*i.src });
                    if i.input != Value::Null {
                        invoked["input"] = i.input.to_json();
                    }
                    invoked
                })
                .collect()
        })
        .unwrap_or_default();
    let cancelled: Vec<&str> = step
        .map(|step| step.cancelled.iter().map(|c| &*c.id).collect())
        .unwrap_or_default();
    let event = step.and_then(|s| s.event.as_deref());
    let ignored = step.is_some_and(|s| s.ignored);
    match format {
        RunFormat::Json => {
            let line = serde_json::json!({
                "event": event,
                "configuration": configuration,
                "context": actor.context().to_json(),
                "effects": effects,
                "invoked": invoked,
                "cancelled": cancelled,
                "ignored": ignored,
            });
            outln(line)
        }
        RunFormat::Text => {
            let what = event.unwrap_or(label);
            let mut line = format!("{what}: {}", configuration.join(", "));
            if ignored {
                line.push_str("  (ignored)");
            }
            for effect in &effects {
                line.push_str(&format!(
                    "  effect {}",
                    effect["effect"].as_str().unwrap_or_default()
                ));
            }
            for id in &cancelled {
                line.push_str(&format!("  cancel {id}"));
            }
            for invocation in &invoked {
                line.push_str(&format!(
                    "  invoke {} ({})",
                    invocation["id"].as_str().unwrap_or_default(),
                    invocation["src"].as_str().unwrap_or_default()
                ));
            }
            outln(line)
        }
    }
}
