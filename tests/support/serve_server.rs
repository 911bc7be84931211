//! A running `idemchart serve` for the tests of the service
//! (`#[path]`-included, so each test crate gets its own copy): the built
//! binary, its log read for the address it listens on and kept for the
//! test to read, SIGKILLed when dropped.

// Each test crate that includes this file uses part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

pub struct Server {
    child: Child,
    /// `host:port`, as the service logged it.
    pub address: String,
    /// `http://` and the address.
    pub base: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Runs `command` (the binary, or a shell that execs it) as
    /// `serve --machines machines --store store --listen listen` and `extra`,
    /// and waits until it listens.
    pub fn spawn(
        mut command: Command,
        machines: &str,
        listen: &str,
        store: &str,
        extra: &[&str],
    ) -> Server {
        let mut child = command
            .args(["serve", "--machines", machines, "--store", store])
            .args(["--listen", listen, "--poll-ms", "50"])
            .args(extra)
            .env("RUST_LOG", "info")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start idemchart serve");
        let stderr = child.stderr.take().expect("stderr is piped");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let lines = Arc::clone(&log);
        // The reader drains the log for the server's whole life, so that a
        // full pipe never blocks it. It splits on the newline byte alone, as
        // a log reader would: a forged line shows as a line of its own.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).split(b'\n') {
                let Ok(line) = line else { break };
                let line = String::from_utf8_lossy(&line).into_owned();
                if let Some(rest) = line.split("listening address=").nth(1) {
                    let address = rest.split_whitespace().next().unwrap_or("").to_string();
                    let _ = tx.send(Some(address));
                }
                lines.lock().unwrap().push(line);
            }
            let _ = tx.send(None);
        });
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Some(address)) => Server {
                child,
                base: format!("http://{address}"),
                address,
                log,
            },
            _ => {
                let _ = child.kill();
                panic!(
                    "idemchart serve did not start:\n{}",
                    log.lock().unwrap().join("\n")
                );
            }
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The log so far, a line an entry.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The log so far, as one text.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Asks `check` every 20 ms until it answers `Ok`, for at most 30 s
    /// (a background round of the service runs meanwhile); past that,
    /// fails with its last `Err` and the service's log.
    pub async fn until<T>(&self, mut check: impl AsyncFnMut() -> Result<T, String>) -> T {
        let started = std::time::Instant::now();
        loop {
            let why = match check().await {
                Ok(done) => return done,
                Err(why) => why,
            };
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{why}\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Every log line is one line of text: no control character but a
    /// tab, and no line that a request wrote.
    pub fn assert_clean_log(&self) {
        for line in self.log_lines() {
            assert!(
                !line.chars().any(|c| c.is_control() && c != '\t'),
                "a raw control character in the log: {line:?}"
            );
            assert!(!line.starts_with("FORGED"), "a forged line: {line:?}");
        }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits for the exit.
    pub fn terminate(&mut self) -> ExitStatus {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success());
        self.child.wait().expect("wait for idemchart serve")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}
