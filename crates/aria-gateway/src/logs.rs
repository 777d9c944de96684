//! ARIA's log files read back, for `aria logs` and Telegram's `/logs`.
//!
//! Every ARIA process appends JSON lines (tracing-subscriber's JSON format, already scrubbed of
//! secrets) to `$ARIA_HOME/logs/aria.jsonl`. When that file grows past its size limit the
//! writer renames it to `aria.1.jsonl`, shifting older ones up (`aria.2.jsonl`, …), and starts
//! a new one; the oldest are deleted to cap the disk used. This module owns those names, reads
//! the files oldest first, filters by level and time, and follows the current file across a
//! rotation. Writing and rotating is the CLI's logging layer (`aria-cli/src/logging`).
//!
//! The one decision to know: **a line that is not one of ours is kept, not dropped.** A torn
//! write or a hand edit is shown as it is (`Entry::event` is `None`) and the reader never fails
//! on content; only I/O errors are errors. Whether such a line passes a filter is the caller's
//! choice ([`Filter::unparsed`]), since its level and time are unknown.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::Deserialize;
use serde_json::Value;

/// The file every process appends to.
pub const CURRENT: &str = "aria.jsonl";

/// `dir/aria.jsonl`.
pub fn current(dir: &Path) -> PathBuf {
    dir.join(CURRENT)
}

/// `dir/aria.N.jsonl`: the `n`-th newest rotated file (1 is the newest).
pub fn rotated(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("aria.{n}.jsonl"))
}

/// The numbers of the rotated files in `dir`, ascending (newest first). A missing directory
/// has none.
pub fn rotated_numbers(dir: &Path) -> io::Result<Vec<u32>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut numbers = Vec::new();
    for entry in entries {
        let name = entry?.file_name();
        let n = name
            .to_str()
            .and_then(|n| n.strip_prefix("aria."))
            .and_then(|n| n.strip_suffix(".jsonl"))
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| *n > 0);
        numbers.extend(n);
    }
    numbers.sort_unstable();
    Ok(numbers)
}

/// Every log file in `dir`, oldest first: `aria.N.jsonl` … `aria.1.jsonl`, then `aria.jsonl`.
pub fn files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> =
        rotated_numbers(dir)?.into_iter().rev().map(|n| rotated(dir, n)).collect();
    let current = current(dir);
    if current.exists() {
        out.push(current);
    }
    Ok(out)
}

/// A tracing level, ordered from the most verbose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    /// `trace`, `DEBUG`, `warning`, … (any case); `None` for anything else.
    pub fn parse(text: &str) -> Option<Level> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "trace" => Level::Trace,
            "debug" => Level::Debug,
            "info" => Level::Info,
            "warn" | "warning" => Level::Warn,
            "error" => Level::Error,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Trace => "TRACE",
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        }
    }

    fn colour(self) -> &'static str {
        match self {
            Level::Trace => "\x1b[35m",
            Level::Debug => "\x1b[34m",
            Level::Info => "\x1b[32m",
            Level::Warn => "\x1b[33m",
            Level::Error => "\x1b[31m",
        }
    }
}

/// One line of a log file.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The line as written, without its newline.
    pub raw: String,
    /// The event, when the line is one of ours (JSON with a timestamp and a level).
    pub event: Option<Event>,
}

/// A parsed log event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub time: Timestamp,
    pub level: Level,
    pub message: String,
    /// The event's fields other than `message`, then those of its span that it does not
    /// repeat, in the order written.
    pub fields: Vec<(String, Value)>,
    pub target: String,
}

/// The JSON shape of a line, with its objects' keys kept in order.
#[derive(Deserialize)]
struct Line {
    timestamp: String,
    level: String,
    #[serde(default)]
    fields: Ordered,
    #[serde(default)]
    target: String,
    #[serde(default)]
    span: Ordered,
}

#[derive(Default)]
struct Ordered(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, Value>()? {
                    out.push(entry);
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(Visitor)
    }
}

impl Entry {
    /// Reads one line; never fails (see the module documentation).
    pub fn parse(line: &str) -> Entry {
        let line = line.trim_end_matches(['\n', '\r']);
        Entry { raw: line.to_owned(), event: Self::event(line) }
    }

    fn event(line: &str) -> Option<Event> {
        let parsed: Line = serde_json::from_str(line).ok()?;
        let time = parsed.timestamp.parse::<Timestamp>().ok()?;
        let level = Level::parse(&parsed.level)?;
        let mut message = String::new();
        let mut fields = Vec::new();
        for (key, value) in parsed.fields.0 {
            match (key.as_str(), value) {
                ("message", Value::String(text)) => message = text,
                (_, value) => fields.push((key, value)),
            }
        }
        for (key, value) in parsed.span.0 {
            if key != "name" && !fields.iter().any(|(k, _)| *k == key) {
                fields.push((key, value));
            }
        }
        Some(Event { time, level, message, fields, target: parsed.target })
    }

    /// `2026-11-26 18:04:12 WARN  message  key=value …`, the time in `zone`; colour codes when
    /// `colour`. A line that is not one of ours is returned as it is.
    pub fn readable(&self, zone: &jiff::tz::TimeZone, colour: bool) -> String {
        let Some(event) = &self.event else { return self.raw.clone() };
        let time = event.time.to_zoned(zone.clone()).strftime("%Y-%m-%d %H:%M:%S").to_string();
        let (dim, reset, level_colour) =
            if colour { ("\x1b[2m", "\x1b[0m", event.level.colour()) } else { ("", "", "") };
        let mut out = format!(
            "{dim}{time}{reset} {level_colour}{:<5}{reset} {}",
            event.level.as_str(),
            event.message
        );
        if !event.fields.is_empty() {
            out.push(' ');
        }
        for (key, value) in &event.fields {
            let _ = write!(out, " {dim}{key}={reset}{}", show_value(value));
        }
        out
    }
}

/// A value as `key=value` shows it: plain strings bare, others quoted or as JSON.
fn show_value(value: &Value) -> String {
    match value {
        Value::String(s)
            if !s.is_empty()
                && !s.contains(|c: char| c.is_whitespace() || c == '"' || c == '=') =>
        {
            s.clone()
        }
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// Which lines to keep.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// The least severe level kept (`Warn` keeps warnings and errors).
    pub min_level: Option<Level>,
    /// Events before this are dropped.
    pub since: Option<Timestamp>,
    /// Keep lines that are not ours (whose level and time are unknown).
    pub unparsed: bool,
}

impl Filter {
    pub fn admits(&self, entry: &Entry) -> bool {
        let Some(event) = &entry.event else { return self.unparsed };
        self.min_level.is_none_or(|min| event.level >= min)
            && self.since.is_none_or(|since| event.time >= since)
    }
}

/// The end of the logs: the last lines that passed a filter, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Tail {
    pub entries: Vec<Entry>,
    /// How many lines passed the filter in all (`entries` holds the last of them).
    pub matched: usize,
}

/// The last `limit` lines (0: all) of the logs in `dir` that pass `filter`, oldest first;
/// `None` when there is no log file at all.
pub fn tail(dir: &Path, filter: &Filter, limit: usize) -> io::Result<Option<Tail>> {
    if files(dir)?.is_empty() {
        return Ok(None);
    }
    backlog(dir, filter, limit, &mut Follower::new(dir)).map(Some)
}

/// Like [`tail`], with the current file read through `follower`, which then goes on from
/// where the backlog ended: nothing is shown twice, nothing appended meanwhile is missed.
pub fn backlog(
    dir: &Path,
    filter: &Filter,
    limit: usize,
    follower: &mut Follower,
) -> io::Result<Tail> {
    let mut kept = VecDeque::new();
    let mut matched = 0;
    let mut keep = |entry: Entry| {
        if filter.admits(&entry) {
            matched += 1;
            kept.push_back(entry);
            if limit > 0 && kept.len() > limit {
                kept.pop_front();
            }
        }
    };
    for n in rotated_numbers(dir)?.into_iter().rev() {
        let path = rotated(dir, n);
        let file = match File::open(&path) {
            Ok(file) => file,
            // Deleted by a writer's size cap since the listing.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        // A rotated file last written before `since` holds nothing newer.
        let last_write = file.metadata()?.modified().ok().and_then(|m| Timestamp::try_from(m).ok());
        if let (Some(since), Some(last)) = (filter.since, last_write)
            && last < since
        {
            continue;
        }
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line)? > 0 {
            if !line.trim_ascii().is_empty() {
                keep(Entry::parse(&String::from_utf8_lossy(&line)));
            }
            line.clear();
        }
    }
    for entry in follower.poll()? {
        keep(entry);
    }
    Ok(Tail { entries: kept.into(), matched })
}

/// Reads what is appended to `aria.jsonl`, and goes on in the new file after a rotation.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    file: Option<File>,
    /// The start of a line whose end has not been written yet.
    partial: Vec<u8>,
    position: u64,
}

impl Follower {
    /// A follower that starts at the beginning of the current file.
    pub fn new(dir: &Path) -> Follower {
        Follower { path: current(dir), file: None, partial: Vec::new(), position: 0 }
    }

    /// The whole lines appended since the last call, oldest first.
    pub fn poll(&mut self) -> io::Result<Vec<Entry>> {
        let mut out = Vec::new();
        // At most a few turns: one per rotation seen since the last call.
        for _ in 0..8 {
            let Some(file) = self.file.as_mut() else {
                match File::open(&self.path) {
                    Ok(file) => {
                        self.file = Some(file);
                        self.position = 0;
                        self.partial.clear();
                        continue;
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
                    Err(e) => return Err(e),
                }
            };
            Self::drain(file, &mut self.position, &mut self.partial, &mut out)?;
            if same_file(&self.path, file)? {
                break;
            }
            // Rotated: a writer that had not noticed yet may have added a line to the old
            // file after the read above; read it once more, then move to the new file.
            Self::drain(file, &mut self.position, &mut self.partial, &mut out)?;
            if !self.partial.trim_ascii().is_empty() {
                out.push(Entry::parse(&String::from_utf8_lossy(&self.partial)));
            }
            self.file = None;
        }
        Ok(out)
    }

    fn drain(
        file: &mut File,
        position: &mut u64,
        partial: &mut Vec<u8>,
        out: &mut Vec<Entry>,
    ) -> io::Result<()> {
        if file.metadata()?.len() < *position {
            // Truncated in place (by hand): start again from its beginning.
            *position = 0;
            partial.clear();
        }
        file.seek(SeekFrom::Start(*position))?;
        let read = file.read_to_end(partial)?;
        *position += read as u64;
        let Some(end) = partial.iter().rposition(|b| *b == b'\n') else { return Ok(()) };
        let rest = partial.split_off(end + 1);
        for line in String::from_utf8_lossy(partial).lines() {
            if !line.trim().is_empty() {
                out.push(Entry::parse(line));
            }
        }
        *partial = rest;
        Ok(())
    }
}

/// Whether `path` still names the file `file` has open (`false` once it was renamed or
/// deleted: a writer or a reader then opens the path again).
pub fn same_file(path: &Path, file: &File) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let open = file.metadata()?;
        match std::fs::metadata(path) {
            Ok(named) => Ok(named.dev() == open.dev() && named.ino() == open.ino()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (path, file);
        Ok(true)
    }
}

#[cfg(test)]
mod tests;
