//! The server's standard I/O transport: lsp-server's message types over a
//! reader that bounds what a client can make it allocate. lsp-server's own
//! stdio reader allocates the `Content-Length` a header announces before
//! any byte of the body arrives (a length of 2^64 - 1 panics, one of 40 GB
//! grows memory without end), so the server reads the frames itself: a
//! header line is at most 8 KiB, a message at most `max_message_bytes`,
//! and the body is read as it arrives, never allocated ahead.

use std::io::{self, BufRead, Read, Write};
use std::thread;

use crossbeam_channel::{Receiver, Sender, bounded};
use lsp_server::{Connection, Message};

/// The longest header line the reader takes, `\r\n` included.
const MAX_HEADER_LINE: u64 = 8 * 1024;
/// The most header lines one message may have.
const MAX_HEADERS: usize = 32;

/// The reader and writer threads of a stdio connection.
pub struct IoThreads {
    reader: thread::JoinHandle<io::Result<()>>,
    writer: thread::JoinHandle<io::Result<()>>,
}

impl IoThreads {
    /// Waits for both threads: the reader's error first (a message too
    /// large, a broken frame), else the writer's.
    pub fn join(self) -> io::Result<()> {
        let reader = self
            .reader
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the reader panicked")));
        let writer = self
            .writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the writer panicked")));
        reader.and(writer)
    }
}

/// A message at least this long is followed by a call of `release` on the
/// thread that read or wrote it.
const LARGE_MESSAGE: usize = 1 << 20;

/// A connection over standard input and output whose messages are at most
/// `max_message_bytes` long. `release` hands memory freed on the calling
/// thread back to the system (the binary's allocator keeps each thread's
/// freed pages until that thread asks): each thread calls it after a large
/// message.
pub fn stdio(max_message_bytes: usize, release: Option<fn()>) -> (Connection, IoThreads) {
    let (writer_sender, writer_receiver) = bounded::<Message>(0);
    let writer = thread::Builder::new()
        .name("lsp-writer".to_owned())
        .spawn(move || write_all(writer_receiver, &mut io::stdout().lock(), release))
        .expect("the writer thread starts");
    let (reader_sender, reader_receiver) = bounded::<Message>(0);
    let reader = thread::Builder::new()
        .name("lsp-reader".to_owned())
        .spawn(move || {
            read_all(
                &mut io::stdin().lock(),
                max_message_bytes,
                &reader_sender,
                release,
            )
        })
        .expect("the reader thread starts");
    let connection = Connection {
        sender: writer_sender,
        receiver: reader_receiver,
    };
    (connection, IoThreads { reader, writer })
}

fn write_all(
    messages: Receiver<Message>,
    out: &mut impl Write,
    release: Option<fn()>,
) -> io::Result<()> {
    let mut out = Counted { out, bytes: 0 };
    for message in messages {
        out.bytes = 0;
        message.write(&mut out)?;
        // The message and its text were freed on this thread.
        if out.bytes >= LARGE_MESSAGE
            && let Some(release) = release
        {
            release();
        }
    }
    Ok(())
}

/// A writer that counts what goes through it.
struct Counted<'a, W> {
    out: &'a mut W,
    bytes: usize,
}

impl<W: Write> Write for Counted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.out.write(buf)?;
        self.bytes += written;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Reads messages until the input ends, the client's `exit`, or a frame
/// the reader refuses (then the error says why, and the server ends as if
/// the input had ended).
///
/// After a large message, and after the message that follows it, the
/// reader calls `release`: the message's frame was freed here, and its
/// text (a document's, copied by the main loop) is freed by the main loop
/// into this thread's heap once it is handled.
fn read_all(
    input: &mut impl BufRead,
    max: usize,
    messages: &Sender<Message>,
    release: Option<fn()>,
) -> io::Result<()> {
    let mut after_large = 0;
    while let Some((message, bytes)) = read_message_sized(input, max)? {
        let exit = matches!(&message, Message::Notification(n) if n.method == "exit");
        if messages.send(message).is_err() || exit {
            break;
        }
        if bytes >= LARGE_MESSAGE {
            after_large = 2;
        }
        if after_large > 0
            && let Some(release) = release
        {
            after_large -= 1;
            release();
        }
    }
    Ok(())
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// One message and the length of its body, `None` at the end of the input.
fn read_message_sized(
    input: &mut impl BufRead,
    max: usize,
) -> io::Result<Option<(Message, usize)>> {
    let mut length = None;
    let mut line = Vec::new();
    for count in 0.. {
        if count == MAX_HEADERS {
            return Err(invalid(format!(
                "a message has more than {MAX_HEADERS} header lines"
            )));
        }
        line.clear();
        input
            .by_ref()
            .take(MAX_HEADER_LINE)
            .read_until(b'\n', &mut line)?;
        if line.is_empty() {
            return match count {
                0 => Ok(None),
                _ => Err(invalid("the input ended inside a message's headers".into())),
            };
        }
        let Some(header) = line.strip_suffix(b"\r\n") else {
            return Err(invalid(format!(
                "a header line is longer than {MAX_HEADER_LINE} bytes or does not end with CRLF"
            )));
        };
        if header.is_empty() {
            break;
        }
        let header =
            std::str::from_utf8(header).map_err(|_| invalid("a header is not UTF-8".into()))?;
        let Some((name, value)) = header.split_once(':') else {
            return Err(invalid(format!("a malformed header: {header:?}")));
        };
        if name.trim().eq_ignore_ascii_case("Content-Length") {
            let value = value.trim();
            // A length too large for any integer is as refused as one over the limit.
            let bytes: u128 = value.parse().map_err(|_| {
                invalid(format!("a Content-Length that is not a length: {value:?}"))
            })?;
            if bytes > max as u128 {
                return Err(invalid(format!(
                    "a message of {bytes} bytes is larger than the limit of {max} bytes (`idemchart lsp --max-message-bytes`)"
                )));
            }
            length = Some(bytes as usize);
        }
    }
    let length = length.ok_or_else(|| invalid("a message without Content-Length".into()))?;
    // Read as the bytes arrive: a client that announces more than it sends
    // costs what it sent.
    let mut body = Vec::new();
    input.by_ref().take(length as u64).read_to_end(&mut body)?;
    if body.len() < length {
        return Err(invalid(format!(
            "the input ended {} bytes into a message of {length}",
            body.len()
        )));
    }
    serde_json::from_slice(&body)
        .map(|message| Some((message, length)))
        .map_err(|e| invalid(format!("a message that is not a JSON-RPC message: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(input: &[u8], max: usize) -> io::Result<Option<Message>> {
        Ok(read_message_sized(&mut io::BufReader::new(input), max)?.map(|(message, _)| message))
    }

    #[test]
    fn a_message_within_the_limit_is_read() {
        let body = r#"{"jsonrpc":"2.0","method":"exit"}"#;
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        let message = read(frame.as_bytes(), 1024).unwrap().unwrap();
        assert!(matches!(message, Message::Notification(n) if n.method == "exit"));
        assert!(read(b"", 1024).unwrap().is_none());
    }

    #[test]
    fn absurd_and_oversized_lengths_are_refused_before_any_allocation() {
        for length in [
            "18446744073709551615",
            "40000000000",
            "99999999999999999999999999",
        ] {
            let frame = format!("Content-Length: {length}\r\n\r\n{{}}");
            let error = read(frame.as_bytes(), 64 << 20).unwrap_err();
            assert!(
                error.to_string().contains("larger than the limit"),
                "{error}"
            );
        }
        let error = read(b"Content-Length: 2000\r\n\r\n{}", 1000).unwrap_err();
        assert!(error.to_string().contains("2000 bytes"), "{error}");
    }

    #[test]
    fn broken_frames_are_errors() {
        let long = format!("X-Long: {}\r\n", "a".repeat(10_000));
        for (input, says) in [
            (&b"Content-Length: 5\r\n\r\n{}"[..], "ended 2 bytes into"),
            (b"Content-Length: x\r\n\r\n", "not a length"),
            (b"\r\n{}", "without Content-Length"),
            (b"Content-Length: 2\n\n{}", "CRLF"),
            (long.as_bytes(), "longer than"),
            (b"Content-Length: 2\r\n", "inside a message's headers"),
            (b"Content-Length: 2\r\n\r\nno", "not a JSON-RPC message"),
        ] {
            let error = read(input, 1024).unwrap_err();
            assert!(error.to_string().contains(says), "{error} (wanted {says})");
        }
    }
}
