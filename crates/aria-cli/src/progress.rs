//! Shows that work is happening. On a terminal, one line on stderr: a
//! spinner, the current step (`thinking`, `file_read notes.md`) and how long it has taken,
//! redrawn in place and erased before anything else is printed. When stderr is not a terminal
//! (or `TERM=dumb`) nothing is drawn: the plain `→ tool` / `✓ tool` lines are the record.
//!
//! A step is drawn only after [`SHOW_AFTER`], so quick steps never flicker. Whoever prints a
//! question to the user (the approval prompt) holds the line ([`hold`]) so that the spinner
//! never draws over it.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A step shorter than this is never drawn.
pub const SHOW_AFTER: Duration = Duration::from_millis(300);
/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(100);
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/// The longest step text drawn (a tool's arguments are clipped to fit one line).
const STEP_CHARS: usize = 60;

/// The one progress line of this process.
static LINE: Mutex<Line> = Mutex::new(Line { step: None, drawn: false, frame: 0 });
/// Prompts on screen: while any is, nothing is drawn.
static HELD: AtomicUsize = AtomicUsize::new(0);

/// What the line shows.
#[derive(Debug)]
struct Line {
    step: Option<(String, Instant)>,
    /// Whether something is on screen that must be erased before other output.
    drawn: bool,
    frame: usize,
}

impl Line {
    /// Draws the current step when it has lasted [`SHOW_AFTER`].
    fn tick(&mut self, now: Instant, out: &mut dyn Write) {
        let Some((step, since)) = &self.step else { return };
        let elapsed = now.saturating_duration_since(*since);
        if elapsed < SHOW_AFTER {
            return;
        }
        self.frame = (self.frame + 1) % FRAMES.len();
        let _ = write!(out, "\r\x1b[2K{} {step} · {}s", FRAMES[self.frame], elapsed.as_secs());
        let _ = out.flush();
        self.drawn = true;
    }

    /// Erases the line if it is drawn.
    fn erase(&mut self, out: &mut dyn Write) {
        if self.drawn {
            let _ = write!(out, "\r\x1b[2K");
            let _ = out.flush();
            self.drawn = false;
        }
    }

    fn set(&mut self, step: Option<String>, now: Instant, out: &mut dyn Write) {
        self.erase(out);
        self.step = step.map(|s| (crate::render::clip(&s, STEP_CHARS), now));
    }
}

fn line() -> MutexGuard<'static, Line> {
    LINE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The progress line of one run's rendering; drawing stops when it is dropped.
#[derive(Debug)]
pub struct Progress {
    ticker: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

impl Progress {
    /// Draws only when `wanted` and stderr is a terminal that understands control codes.
    pub fn new(wanted: bool) -> Progress {
        let terminal =
            std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb");
        if !(wanted && terminal) {
            return Progress { ticker: None };
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let ticker = std::thread::Builder::new().name("aria-progress".into()).spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(TICK);
                if HELD.load(Ordering::SeqCst) == 0 {
                    line().tick(Instant::now(), &mut std::io::stderr());
                }
            }
        });
        Progress { ticker: ticker.ok().map(|t| (stop, t)) }
    }

    /// The current step is now `step` (shown after [`SHOW_AFTER`]).
    pub fn step(&self, step: impl Into<String>) {
        if self.ticker.is_some() {
            line().set(Some(step.into()), Instant::now(), &mut std::io::stderr());
        }
    }

    /// Nothing to show (the answer is streaming, or something else is printed next); erases the
    /// line at once.
    pub fn idle(&self) {
        if self.ticker.is_some() {
            line().set(None, Instant::now(), &mut std::io::stderr());
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some((stop, ticker)) = self.ticker.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = ticker.join();
            line().set(None, Instant::now(), &mut std::io::stderr());
        }
    }
}

/// Keeps the progress line off the screen while a question is shown.
#[derive(Debug)]
pub struct Hold(());

/// Erases the progress line and keeps it off until the returned guard is dropped.
pub fn hold() -> Hold {
    HELD.fetch_add(1, Ordering::SeqCst);
    line().erase(&mut std::io::stderr());
    Hold(())
}

impl Drop for Hold {
    fn drop(&mut self) {
        HELD.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Line {
        Line { step: None, drawn: false, frame: 0 }
    }

    #[test]
    fn a_step_is_drawn_after_the_delay_with_its_time_and_erased_before_the_next() {
        let t0 = Instant::now();
        let mut line = fresh();
        let mut out = Vec::new();
        line.set(Some("thinking".into()), t0, &mut out);
        line.tick(t0 + Duration::from_millis(100), &mut out);
        assert!(out.is_empty(), "a quick step never flickers");
        line.tick(t0 + Duration::from_millis(2_400), &mut out);
        let drawn = String::from_utf8(out.clone()).unwrap();
        assert_eq!(drawn, "\r\x1b[2K⠙ thinking · 2s");
        out.clear();
        line.set(Some("file_read {\"path\":\"notes.md\"}".into()), t0, &mut out);
        assert_eq!(String::from_utf8(out.clone()).unwrap(), "\r\x1b[2K", "erased first");
        out.clear();
        line.set(None, t0, &mut out);
        line.tick(t0 + Duration::from_secs(9), &mut out);
        assert!(out.is_empty(), "nothing was on screen, nothing to draw");
    }

    #[test]
    fn a_long_step_is_clipped_to_one_line() {
        let t0 = Instant::now();
        let mut line = fresh();
        let mut out = Vec::new();
        line.set(Some(format!("shell_execute {}", "x".repeat(500))), t0, &mut out);
        line.tick(t0 + Duration::from_secs(1), &mut out);
        let drawn = String::from_utf8(out).unwrap();
        assert!(drawn.chars().count() < STEP_CHARS + 20, "{drawn}");
        assert!(drawn.contains('…'));
    }

    #[test]
    fn without_a_terminal_nothing_is_drawn_or_erased() {
        // The test harness's stderr is not a terminal.
        let progress = Progress::new(true);
        assert!(progress.ticker.is_none());
        progress.step("thinking");
        assert!(line().step.is_none());
    }
}
