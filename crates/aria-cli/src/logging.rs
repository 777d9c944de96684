//! Logging: human lines on stderr (warn by default), JSON lines under the data directory
//! (rotated by size, [`rotate`]), and both passed through the secret redactor. Scrubbing
//! happens at the writer, after formatting, so it covers every field of every event whatever
//! its shape.

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

mod rotate;
pub use rotate::{RotatingFile, SizeLimits};

use aria_api::Redact;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// A writer factory whose writers redact each formatted event before it reaches `inner`.
#[derive(Clone)]
pub struct Scrubbing<W> {
    inner: W,
    redactor: Arc<dyn Redact>,
}

impl<W> Scrubbing<W> {
    pub fn new(inner: W, redactor: Arc<dyn Redact>) -> Self {
        Scrubbing { inner, redactor }
    }
}

pub struct ScrubWriter<W: Write> {
    inner: W,
    redactor: Arc<dyn Redact>,
}

impl<W: Write> Write for ScrubWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // tracing-subscriber hands over one whole formatted event per call.
        let text = String::from_utf8_lossy(buf);
        self.inner.write_all(self.redactor.redact(&text).as_bytes())?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<'a, W> MakeWriter<'a> for Scrubbing<W>
where
    W: MakeWriter<'a> + 'static,
{
    type Writer = ScrubWriter<W::Writer>;
    fn make_writer(&'a self) -> Self::Writer {
        ScrubWriter { inner: self.inner.make_writer(), redactor: Arc::clone(&self.redactor) }
    }
}

/// What the log file keeps by default: ARIA's `info` and above; the MCP SDK's own `info` lines
/// (one per message it handles) only from `warn` up.
const FILE_LEVEL: &str = "info,rmcp=warn";

/// Installs the global subscriber. `level` filters stderr; the file (`None`: no file) gets
/// [`FILE_LEVEL`] unless `ARIA_LOG_FILE` says otherwise. Returns a warning to show if the
/// file could not be opened (logging then continues on stderr only: the run is not worth
/// failing for it).
pub fn init(
    level: &str,
    data_dir: &Path,
    file: Option<SizeLimits>,
    redactor: Arc<dyn Redact>,
) -> Option<String> {
    let stderr_filter = EnvFilter::try_new(level).unwrap_or_else(|_| EnvFilter::new("warn"));
    let stderr_layer = tracing_subscriber::fmt::layer()
        .with_writer(Scrubbing::new(io::stderr, Arc::clone(&redactor)))
        .with_ansi(colour_on_stderr())
        .with_target(false)
        .without_time()
        .with_filter(stderr_filter);
    let mut warning = None;
    let file_layer = if let Some(limits) = file {
        match RotatingFile::open(&data_dir.join("logs"), limits) {
            Ok(file) => {
                let filter =
                    std::env::var("ARIA_LOG_FILE").ok().and_then(|f| EnvFilter::try_new(f).ok());
                Some(
                    tracing_subscriber::fmt::layer()
                        .json()
                        .with_writer(Scrubbing::new(file, redactor))
                        .with_filter(filter.unwrap_or_else(|| EnvFilter::new(FILE_LEVEL))),
                )
            }
            Err(e) => {
                warning = Some(format!(
                    "could not open the log file under {}: {e}; logging to stderr only",
                    data_dir.display()
                ));
                None
            }
        }
    } else {
        None
    };
    let _ = tracing_subscriber::registry().with(stderr_layer).with(file_layer).try_init();
    warning
}

/// Colour codes only for a person at a terminal: never when stderr is a pipe or a file, nor
/// when `NO_COLOR` is set (https://no-color.org).
pub fn colour_on_stderr() -> bool {
    use std::io::IsTerminal;
    io::stderr().is_terminal() && colour_allowed()
}

/// Like [`colour_on_stderr`], for what a command prints on stdout (`aria logs`).
pub fn colour_on_stdout() -> bool {
    use std::io::IsTerminal;
    io::stdout().is_terminal() && colour_allowed()
}

fn colour_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
