//! `aria logs`: ARIA's JSON-lines log read back — the rotated files and the current
//! one in order, filtered by level and time, rendered one readable line per event (or printed
//! as written with `--json`), and followed as it grows with `--follow`. Reading is
//! `aria_gateway::logs`, shared with Telegram's `/logs`.

use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

use aria_gateway::logs::{self, Entry, Filter, Follower, Level};
use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::app;
use crate::cli::{GlobalArgs, LogLevel, LogsArgs};
use crate::exit::{CliError, CliResult, OK};

/// How often `--follow` looks for new lines.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

fn level(level: LogLevel) -> Level {
    match level {
        LogLevel::Trace => Level::Trace,
        LogLevel::Debug => Level::Debug,
        LogLevel::Info => Level::Info,
        LogLevel::Warn => Level::Warn,
        LogLevel::Error => Level::Error,
    }
}

/// How lines are printed.
struct Printer {
    json: bool,
    zone: TimeZone,
    colour: bool,
}

impl Printer {
    fn print(&self, out: &mut impl Write, entry: &Entry) -> io::Result<()> {
        if self.json {
            writeln!(out, "{}", entry.raw)
        } else {
            writeln!(out, "{}", entry.readable(&self.zone, self.colour))
        }
    }
}

pub fn logs(global: &GlobalArgs, args: LogsArgs) -> CliResult<u8> {
    let config = app::load_config(global)?;
    let dir = config.data_dir.join("logs");
    let since = args
        .since
        .as_deref()
        .map(|text| aria_api::parse_since(text, Timestamp::now()))
        .transpose()
        .map_err(|e| CliError::config(anyhow::anyhow!("--since {e}")))?;
    // A line that is not ours is shown as it is: its level and time are unknown, and hiding it
    // could hide what is being looked for.
    let filter = Filter { min_level: args.level.map(level), since, unparsed: true };
    let printer = Printer {
        json: args.json,
        zone: TimeZone::system(),
        colour: !args.json && crate::logging::colour_on_stdout(),
    };
    let files = logs::files(&dir).map_err(|e| read_error(&dir, e))?;
    if files.is_empty() {
        let why = if config.log_file {
            "ARIA writes it when it runs (aria run, aria chat, aria serve)"
        } else {
            "logging to a file is off ([logging] file = false)"
        };
        eprintln!("There is no log file in {} yet: {why}.", dir.display());
        if !args.follow {
            return Ok(OK);
        }
        eprintln!("Waiting for one (Ctrl-C stops).");
    }
    let mut follower = Follower::new(&dir);
    let tail =
        logs::backlog(&dir, &filter, args.limit, &mut follower).map_err(|e| read_error(&dir, e))?;
    let mut out = io::stdout().lock();
    for entry in &tail.entries {
        if printer.print(&mut out, entry).is_err() {
            // The reader went away (`aria logs | head`): a normal end.
            return Ok(OK);
        }
    }
    if !args.follow {
        return Ok(OK);
    }
    if out.flush().is_err() {
        return Ok(OK);
    }
    loop {
        std::thread::sleep(FOLLOW_EVERY);
        let entries = follower.poll().map_err(|e| read_error(&dir, e))?;
        for entry in entries.iter().filter(|e| filter.admits(e)) {
            if printer.print(&mut out, entry).is_err() {
                return Ok(OK);
            }
        }
        if out.flush().is_err() {
            return Ok(OK);
        }
    }
}

fn read_error(dir: &Path, e: io::Error) -> CliError {
    CliError::failed(anyhow::anyhow!(
        "cannot read the log files in {}: {e}; check that this user can read them",
        dir.display()
    ))
}
