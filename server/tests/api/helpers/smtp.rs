//! A real SMTP server for the e-mail tests: `fixtures/smtp_sink.py` (aiosmtpd) on a free loopback
//! port, writing each message it accepts as JSON to a temporary directory. `scripts/test.sh`
//! installs aiosmtpd in `.tools/venv`; `BERTH_TEST_PYTHON` may name another interpreter.

use super::python_fixture;
use std::process::{Child, Command, Stdio};

/// How the sink answers.
#[derive(Debug, Clone, Copy)]
pub enum SinkMode {
    /// Accepts every message.
    Accept,
    /// Answers the first `n` messages 451 (try again later), then accepts.
    FailFirst(u32),
    /// Refuses every message with 550.
    Reject,
}

/// A running SMTP sink.
pub struct SmtpSink {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Child,
}

pub(crate) fn python() -> String {
    if let Ok(python) = std::env::var("BERTH_TEST_PYTHON") {
        return python;
    }
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../.tools/venv/bin/python");
    if std::path::Path::new(venv).exists() {
        return venv.to_owned();
    }
    panic!(
        "the e-mail tests need Python with aiosmtpd: run scripts/test.sh (it installs it in \
         .tools/venv) or set BERTH_TEST_PYTHON"
    );
}

impl SmtpSink {
    pub fn start(mode: SinkMode) -> Self {
        let dir = tempfile::tempdir().expect("a directory for received mail");
        let mut args = vec![dir.path().display().to_string()];
        match mode {
            SinkMode::Accept => {}
            SinkMode::FailFirst(n) => args.extend(["--fail-first".to_owned(), n.to_string()]),
            SinkMode::Reject => args.push("--reject".to_owned()),
        }
        let (child, port) = python_fixture("smtp_sink.py", &args, "is aiosmtpd installed?");
        Self { port, dir, child }
    }

    /// `smtp://127.0.0.1:<port>` (plain SMTP on loopback).
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Every message accepted so far, in the order received.
    pub fn messages(&self) -> Vec<serde_json::Value> {
        let mut paths: Vec<_> = std::fs::read_dir(self.dir.path())
            .expect("read the mail directory")
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        paths.sort();
        paths
            .iter()
            .map(|path| {
                serde_json::from_str(&std::fs::read_to_string(path).expect("a message"))
                    .expect("a message as JSON")
            })
            .collect()
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The events of iCalendar `text` as Python's `icalendar` package parses them (it raises on bad
/// syntax, which fails the test): uid, dtstart, dtend (ISO 8601), summary, status, sequence,
/// url, location.
pub fn parse_calendar(text: &str) -> Vec<serde_json::Value> {
    use std::io::Write;
    let script = r#"
import icalendar, json, sys
calendar = icalendar.Calendar.from_ical(sys.stdin.read())
print(json.dumps([
    {
        "uid": str(e.get("uid")),
        "dtstart": e.decoded("dtstart").isoformat(),
        "dtend": e.decoded("dtend").isoformat(),
        "summary": str(e.get("summary")),
        "status": str(e.get("status")),
        "sequence": int(e.get("sequence", 0)),
        "url": str(e.get("url")) if e.get("url") is not None else None,
        "location": str(e.get("location")),
    }
    for e in calendar.walk("VEVENT")
]))
"#;
    let mut child = Command::new(python())
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start Python");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write the calendar");
    let output = child.wait_with_output().expect("Python finishes");
    assert!(
        output.status.success(),
        "icalendar refused the calendar:\n{text}"
    );
    serde_json::from_slice(&output.stdout).expect("events as JSON")
}
