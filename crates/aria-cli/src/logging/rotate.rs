//! The JSON log file, rotated by size with a cap on the disk all log files use.
//!
//! Several processes append to `aria.jsonl` at once (the daemon and a CLI run), each through
//! its own descriptor opened in append mode, so a line is never interleaved with another.
//! Before each line a writer checks two things: whether the path still names the file it has
//! open (if another process rotated, it opens the new one), and whether the line would take
//! the file past `max_file`. Rotating renames — never truncates or copies — under an exclusive
//! lock on `logs/rotate.lock`: `aria.N.jsonl` → `aria.N+1.jsonl`, …, `aria.jsonl` →
//! `aria.1.jsonl`, then a new `aria.jsonl`. A writer that had not noticed yet writes its next
//! line into the renamed file, where it stays: no line is lost (the configuration keeps
//! `max_total` at least twice `max_file`, so the file just renamed is never the one deleted).
//! Then the oldest rotated files are deleted until the rotated ones fit in
//! `max_total - max_file`, so the current file can grow to its limit without the total passing
//! `max_total`.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use aria_gateway::logs::{current, rotated, rotated_numbers, same_file};
use tracing_subscriber::fmt::MakeWriter;

/// Size limits of the log files, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeLimits {
    /// The current file is rotated before a line would take it past this.
    pub max_file: u64,
    /// All log files together stay under this.
    pub max_total: u64,
}

/// A log file shared by the threads of this process (a `MakeWriter`), rotated by size.
#[derive(Clone, Debug)]
pub struct RotatingFile(Arc<Mutex<State>>);

#[derive(Debug)]
struct State {
    dir: PathBuf,
    limits: SizeLimits,
    file: File,
}

impl RotatingFile {
    /// Opens (creating) `dir/aria.jsonl`, and deletes rotated files beyond the cap (the limits
    /// may have been lowered since they were written).
    pub fn open(dir: &Path, limits: SizeLimits) -> io::Result<RotatingFile> {
        std::fs::create_dir_all(dir)?;
        let file = open_current(dir)?;
        {
            let _lock = RotateLock::take(dir)?;
            enforce_cap(dir, limits)?;
        }
        Ok(RotatingFile(Arc::new(Mutex::new(State { dir: dir.to_path_buf(), limits, file }))))
    }

    /// Appends one whole line (one event), rotating first when it would not fit.
    fn append(&self, line: &[u8]) -> io::Result<()> {
        let mut state = self.0.lock().map_err(|_| io::Error::other("log file lock poisoned"))?;
        let state = &mut *state;
        if !same_file(&current(&state.dir), &state.file)? {
            state.file = open_current(&state.dir)?;
        }
        let len = state.file.metadata()?.len();
        if len > 0 && len.saturating_add(line.len() as u64) > state.limits.max_file {
            state.rotate()?;
        }
        state.file.write_all(line)
    }
}

impl State {
    fn rotate(&mut self) -> io::Result<()> {
        let _lock = RotateLock::take(&self.dir)?;
        let path = current(&self.dir);
        // Another process rotated between our check and the lock: write to its new file.
        if !same_file(&path, &self.file)? {
            self.file = open_current(&self.dir)?;
            return Ok(());
        }
        for n in rotated_numbers(&self.dir)?.into_iter().rev() {
            std::fs::rename(rotated(&self.dir, n), rotated(&self.dir, n.saturating_add(1)))?;
        }
        std::fs::rename(&path, rotated(&self.dir, 1))?;
        self.file = open_current(&self.dir)?;
        enforce_cap(&self.dir, self.limits)
    }
}

/// Deletes the oldest rotated files until the rotated ones use at most `max_total - max_file`.
fn enforce_cap(dir: &Path, limits: SizeLimits) -> io::Result<()> {
    let budget = limits.max_total.saturating_sub(limits.max_file);
    let mut files: Vec<(PathBuf, u64)> = Vec::new();
    for n in rotated_numbers(dir)? {
        let path = rotated(dir, n);
        match std::fs::metadata(&path) {
            Ok(meta) => files.push((path, meta.len())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    let mut total: u64 = files.iter().map(|(_, len)| len).sum();
    // Newest first: pop the oldest while over the budget.
    while total > budget {
        let Some((path, len)) = files.pop() else { break };
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        total = total.saturating_sub(len);
    }
    Ok(())
}

fn open_current(dir: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(current(dir))
}

/// The lock that makes rotations of one directory one at a time, across processes.
struct RotateLock(File);

impl RotateLock {
    fn take(dir: &Path) -> io::Result<RotateLock> {
        let mut options = OpenOptions::new();
        options.create(true).truncate(false).write(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(dir.join("rotate.lock"))?;
        file.lock()?;
        Ok(RotateLock(file))
    }
}

impl Drop for RotateLock {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first just says so.
        let _ = self.0.unlock();
    }
}

pub struct RotatingWriter(RotatingFile);

impl Write for RotatingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // tracing-subscriber hands over one whole formatted event per call.
        self.0.append(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for RotatingFile {
    type Writer = RotatingWriter;
    fn make_writer(&'a self) -> Self::Writer {
        RotatingWriter(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".jsonl"))
            .collect();
        names.sort();
        names
    }

    fn lines(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for path in aria_gateway::logs::files(dir).unwrap() {
            out.extend(std::fs::read_to_string(path).unwrap().lines().map(str::to_owned));
        }
        out
    }

    #[test]
    fn a_full_file_is_renamed_older_ones_shift_and_the_oldest_go_past_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let limits = SizeLimits { max_file: 100, max_total: 300 };
        let log = RotatingFile::open(dir.path(), limits).unwrap();
        let mut writer = log.make_writer();
        // 40-byte lines: two fit in a file, the third rotates.
        let line = |i: usize| format!("{i:039}\n");
        for i in 0..4 {
            writer.write_all(line(i).as_bytes()).unwrap();
        }
        assert_eq!(names(dir.path()), ["aria.1.jsonl", "aria.jsonl"]);
        assert_eq!(
            lines(dir.path()),
            (0..4).map(|i| line(i).trim().to_owned()).collect::<Vec<_>>()
        );
        for i in 4..20 {
            writer.write_all(line(i).as_bytes()).unwrap();
        }
        // The rotated files fit in 300 - 100 bytes: two of 80 bytes.
        assert_eq!(names(dir.path()), ["aria.1.jsonl", "aria.2.jsonl", "aria.jsonl"]);
        let kept = lines(dir.path());
        assert_eq!(kept, (14..20).map(|i| line(i).trim().to_owned()).collect::<Vec<_>>());
        let total: u64 = aria_gateway::logs::files(dir.path())
            .unwrap()
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum();
        assert!(total <= limits.max_total, "{total}");
        #[cfg(unix)]
        for name in names(dir.path()) {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(&name)).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{name}: {mode:o}");
        }
    }

    #[test]
    fn a_line_bigger_than_the_limit_gets_a_file_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let log =
            RotatingFile::open(dir.path(), SizeLimits { max_file: 10, max_total: 1000 }).unwrap();
        let mut writer = log.make_writer();
        writer.write_all(b"short\n").unwrap();
        writer.write_all(b"a line longer than ten bytes\n").unwrap();
        writer.write_all(b"next\n").unwrap();
        assert_eq!(std::fs::read_to_string(rotated(dir.path(), 2)).unwrap(), "short\n");
        assert_eq!(
            std::fs::read_to_string(rotated(dir.path(), 1)).unwrap(),
            "a line longer than ten bytes\n"
        );
        assert_eq!(std::fs::read_to_string(current(dir.path())).unwrap(), "next\n");
    }

    #[test]
    fn opening_applies_a_lowered_cap() {
        let dir = tempfile::tempdir().unwrap();
        for n in 1..=3 {
            std::fs::write(rotated(dir.path(), n), vec![b'x'; 100]).unwrap();
        }
        RotatingFile::open(dir.path(), SizeLimits { max_file: 100, max_total: 300 }).unwrap();
        assert_eq!(names(dir.path()), ["aria.1.jsonl", "aria.2.jsonl", "aria.jsonl"]);
    }

    /// Two writers with their own descriptors stand for two processes (the rotation lock is
    /// per open file, so it excludes them as it would two processes): every line survives,
    /// whole.
    #[test]
    fn two_writers_rotating_the_same_file_lose_no_line() {
        let dir = tempfile::tempdir().unwrap();
        let limits = SizeLimits { max_file: 2_000, max_total: 10_000_000 };
        let threads: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|who| {
                let log = RotatingFile::open(dir.path(), limits).unwrap();
                std::thread::spawn(move || {
                    let mut writer = log.make_writer();
                    for i in 0..1_000 {
                        writer
                            .write_all(format!("{who} {i:05} {}\n", "-".repeat(20)).as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert!(names(dir.path()).len() > 10, "it rotated: {:?}", names(dir.path()));
        let all = lines(dir.path());
        assert_eq!(all.len(), 2_000);
        for who in ["a", "b"] {
            let mut seen: Vec<u32> = all
                .iter()
                .filter_map(|l| l.strip_prefix(&format!("{who} ")))
                .map(|l| l[..5].parse().unwrap())
                .collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..1_000).collect::<Vec<_>>(), "{who}");
        }
        assert!(all.iter().all(|l| l.len() == 28), "no torn line");
    }
}
