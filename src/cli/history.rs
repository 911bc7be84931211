//! `history` and `replay`: a stored process's timeline, and that timeline
//! run again under another machine file (`runtime::history`).
//!
//! `replay` exits 0 when nothing diverges, 1 at the first divergence, and 2
//! when it cannot run (a store or process that is not there, a machine file
//! that does not load, a history that is not whole).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Subcommand, ValueEnum};

use idemchart::interp::Chart;
use idemchart::runtime::{self, History, history::Applied};

use super::apply::{StoreArgs, open};
use super::{CommandResult, load_or_report, outln};

#[derive(Clone, Copy, ValueEnum)]
pub enum HistoryFormat {
    Human,
    Json,
}

#[derive(Subcommand)]
pub enum HistoryCommand {
    /// Print a stored process's timeline: one entry per applied event and
    /// timer firing, in order, with its revision, the configuration after,
    /// the frozen response and the effects. Payloads are shown where the
    /// machine keeps a history (`history: { keep: 30d }`).
    History {
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        process: String,
        #[arg(long, value_enum, default_value_t = HistoryFormat::Human)]
        format: HistoryFormat,
    },
    /// Run a stored process's history from the start under another machine
    /// file and report the first divergence from what the store recorded
    /// (configuration, context, effects, or a timer that fires differently).
    /// Exit 0 for none, 1 for a divergence, 2 when the replay cannot run.
    Replay {
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        process: String,
        /// The machine file to run the history under.
        #[arg(long)]
        machine: PathBuf,
        #[arg(long, value_enum, default_value_t = HistoryFormat::Human)]
        format: HistoryFormat,
    },
}

pub fn run(command: HistoryCommand) -> CommandResult {
    match command {
        HistoryCommand::History {
            store,
            process,
            format,
        } => {
            let history = read(&store, &process)?;
            match format {
                HistoryFormat::Json => outln(history.to_json())?,
                HistoryFormat::Human => outln(human(&history).trim_end())?,
            }
            Ok(ExitCode::SUCCESS)
        }
        HistoryCommand::Replay {
            store,
            process,
            machine,
            format,
        } => {
            // A file that does not load is bad input here, like a missing
            // store: there is nothing to compare.
            let Some(machine) = load_or_report(&machine, None)? else {
                return Ok(ExitCode::from(2));
            };
            let history = read(&store, &process)?;
            if history.machine != machine.name {
                return Err(format!(
                    "process `{process}` runs machine `{}`, not `{}`",
                    history.machine, machine.name
                )
                .into());
            }
            let chart = Arc::new(Chart::new(machine));
            let replayed = runtime::replay(&chart, &history).map_err(|e| e.to_string())?;
            match format {
                HistoryFormat::Json => outln(replay_json(&history, &replayed))?,
                HistoryFormat::Human => outln(replay_human(&history, &replayed).trim_end())?,
            }
            Ok(if replayed.divergence.is_some() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

/// The history of `process`, or the error that there is none.
fn read(store: &StoreArgs, process: &str) -> Result<History, String> {
    let mut store = open(store)?;
    runtime::history(&mut store, process)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no process `{process}` in the store"))
}

/// What an entry was, in a few words: `event PAY \`p-1\``, or
/// `timer after:a[0] due 1000`.
fn title(entry: &runtime::history::Entry) -> String {
    match &entry.applied {
        Applied::Event { payload: Some(_) } => {
            format!("event {} `{}`", entry.event_type().unwrap_or("?"), entry.id)
        }
        Applied::Event { payload: None } => format!("event `{}`", entry.id),
        Applied::Timer { label, due } => format!("timer {label} (due {due})"),
    }
}

fn compact(value: &serde_json::Value) -> String {
    value.to_string()
}

fn human(history: &History) -> String {
    let version = history
        .version
        .map_or_else(String::new, |v| format!(" version {v}"));
    let count = history.entries.len();
    let mut text = format!(
        "process `{}` of machine `{}`{version}: {count} entr{}\n",
        history.process,
        history.machine,
        if count == 1 { "y" } else { "ies" }
    );
    for (i, entry) in history.entries.iter().enumerate() {
        let r = &entry.response;
        text.push_str(&format!(
            "\n{}. revision {}: {} at {}\n",
            i + 1,
            entry.revision,
            title(entry),
            entry.applied_at
        ));
        match &entry.applied {
            Applied::Event {
                payload: Some(payload),
            } => match &payload["data"] {
                serde_json::Value::Null => text.push_str("   data: none\n"),
                data => text.push_str(&format!("   data: {}\n", compact(data))),
            },
            Applied::Event { payload: None } => {
                text.push_str("   payload: not kept\n");
            }
            Applied::Timer { .. } => {}
        }
        let configuration: Vec<&str> = r["configuration"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p.as_str())
            .collect();
        text.push_str(&format!(
            "   {}: configuration {}, context {}\n",
            r["outcome"].as_str().unwrap_or("?"),
            configuration.join(", "),
            compact(&r["context"])
        ));
        for effect in r["effects"].as_array().into_iter().flatten() {
            let name = effect["effect"].as_str().unwrap_or("?");
            match &effect["args"] {
                serde_json::Value::Null => text.push_str(&format!("   effect {name}\n")),
                args => text.push_str(&format!("   effect {name} {}\n", compact(args))),
            }
        }
        for invocation in r["invocations"].as_array().into_iter().flatten() {
            text.push_str(&format!(
                "   invocation {} of {} {}\n",
                invocation["id"].as_str().unwrap_or("?"),
                invocation["src"].as_str().unwrap_or("?"),
                compact(&invocation["input"])
            ));
        }
    }
    text
}

fn replay_human(history: &History, replayed: &runtime::Replayed) -> String {
    let Some(d) = &replayed.divergence else {
        let n = replayed.entries;
        return format!(
            "no divergence over {n} event{}",
            if n == 1 { "" } else { "s" }
        );
    };
    let entry = &history.entries[d.index - 1];
    let show = |value: &serde_json::Value| match value {
        serde_json::Value::Null => "nothing".to_string(),
        other => compact(other),
    };
    format!(
        "divergence at {} of {} (revision {}, {}): {}\n  recorded: {}\n  replayed: {}",
        d.index,
        replayed.entries,
        d.revision,
        title(entry),
        d.aspect.as_str(),
        show(&d.recorded),
        show(&d.replayed)
    )
}

fn replay_json(history: &History, replayed: &runtime::Replayed) -> serde_json::Value {
    let divergence = replayed.divergence.as_ref().map(|d| {
        serde_json::json!({
            "index": d.index,
            "id": d.id,
            "revision": d.revision,
            "type": history.entries[d.index - 1].event_type(),
            "aspect": d.aspect.as_str(),
            "recorded": d.recorded,
            "replayed": d.replayed,
        })
    });
    serde_json::json!({
        "process": history.process,
        "events": replayed.entries,
        "divergence": divergence,
    })
}
