//! Where the commands write: what a command reports (the lint report, a
//! formatted machine, a diagram, run output) to standard output, as ruff
//! writes its report; what goes wrong with the run itself to standard
//! error. A closed standard output (`idemchart explain I008 | head`) ends
//! the command quietly: nothing more is written, and nothing panics.

use std::fmt::Display;
use std::io::Write;
use std::process::ExitCode;

/// Why a command stopped before its end.
#[derive(Debug)]
pub enum Failure {
    /// The command itself could not run: usage, an unreadable path.
    Message(String),
    /// Whoever read standard output closed it: there is no one left to
    /// tell anything.
    Closed,
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Message(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Failure {
        Failure::Message(message.to_string())
    }
}

/// What a command gives: its exit status, or why it stopped.
pub type CommandResult = Result<ExitCode, Failure>;

/// Writes `text` to standard output, locked for the whole text. A closed
/// pipe is `Failure::Closed`; any other failure to write is a message.
pub fn out(text: impl Display) -> Result<(), Failure> {
    out_with(|stdout| write!(stdout, "{text}"))
}

/// Standard output, locked and buffered, handed to `write` for a report
/// written as it is made (a large lint's is not held whole); failures as
/// `out` gives them.
pub fn out_with(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), Failure> {
    let mut stdout = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    write(&mut stdout)
        .and_then(|()| stdout.flush())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => Failure::Closed,
            _ => Failure::Message(format!("cannot write to standard output: {e}")),
        })
}

/// `out` with a line break after `text`.
pub fn outln(text: impl Display) -> Result<(), Failure> {
    out(format_args!("{text}\n"))
}

/// Writes a line to standard error. A standard error that cannot be
/// written to leaves nowhere to say so: the line is dropped.
pub fn errln(text: impl Display) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// The exit status `code` of a command whose report was written with
/// `written`: a reader that closed the pipe early changes nothing about
/// what was found.
pub fn finish(code: ExitCode, written: Result<(), Failure>) -> CommandResult {
    match written {
        Ok(()) | Err(Failure::Closed) => Ok(code),
        Err(failure) => Err(failure),
    }
}
