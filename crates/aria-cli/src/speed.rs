//! How fast each embedded model runs on this machine, measured rather than guessed: the last
//! finished local generation of each model (tokens per second, generating and reading the
//! prompt) is kept in `$ARIA_HOME/model-speed.json`, and `aria model list` shows it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::task::Poll;

use aria_api::{ChatRequest, ChatStream, Provider};
use aria_local::{GenStats, LocalChatProvider};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

/// The record file, in the data directory.
pub const SPEED_FILE: &str = "model-speed.json";
/// A generation shorter than this says little about speed and is not recorded.
const MIN_TOKENS: usize = 8;

/// One model's measured speed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Speed {
    /// Tokens generated per second.
    pub tokens_per_s: f64,
    /// Prompt tokens read per second (those not reused from the cache); `None` when the whole
    /// prompt was reused.
    pub prompt_tokens_per_s: Option<f64>,
    pub generated_tokens: usize,
    /// Seconds since the Unix epoch.
    pub measured_at: u64,
}

impl Speed {
    fn from_stats(stats: &GenStats) -> Option<Speed> {
        if stats.generated_tokens < MIN_TOKENS || stats.generation_secs <= 0.0 {
            return None;
        }
        let read = stats.prompt_tokens.saturating_sub(stats.reused_tokens);
        let prompt_tokens_per_s =
            (read > 0 && stats.prompt_secs > 0.0).then(|| read as f64 / stats.prompt_secs);
        let measured_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Some(Speed {
            tokens_per_s: stats.generated_tokens as f64 / stats.generation_secs,
            prompt_tokens_per_s,
            generated_tokens: stats.generated_tokens,
            measured_at,
        })
    }
}

fn speed_path(data_dir: &Path) -> PathBuf {
    data_dir.join(SPEED_FILE)
}

/// Every recorded speed, by model; empty when nothing was measured yet.
pub fn read_all(data_dir: &Path) -> BTreeMap<String, Speed> {
    std::fs::read_to_string(speed_path(data_dir))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Records `model`'s speed from a finished generation. Best effort: a failure is logged.
pub fn record(data_dir: &Path, model: &str, stats: &GenStats) {
    let Some(speed) = Speed::from_stats(stats) else { return };
    let mut all = read_all(data_dir);
    all.insert(model.to_owned(), speed);
    let path = speed_path(data_dir);
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    let written = serde_json::to_string_pretty(&all)
        .map_err(std::io::Error::other)
        .and_then(|text| std::fs::write(&tmp, text + "\n"))
        .and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        tracing::warn!(file = %path.display(), "could not record the model's speed: {e}");
    }
}

/// `12.3 tok/s` (and the prompt rate when known), for tables.
pub fn describe(speed: &Speed) -> String {
    match speed.prompt_tokens_per_s {
        Some(p) => format!("{:.1} tok/s (prompt {:.0} tok/s)", speed.tokens_per_s, p),
        None => format!("{:.1} tok/s", speed.tokens_per_s),
    }
}

/// The embedded chat model, recording its speed each time a generation runs to its end.
#[derive(Debug, Clone)]
pub struct Recording {
    inner: LocalChatProvider,
    model: String,
    data_dir: PathBuf,
}

impl Recording {
    pub fn new(inner: LocalChatProvider, model: &str, data_dir: &Path) -> Recording {
        Recording { inner, model: model.to_owned(), data_dir: data_dir.to_owned() }
    }
}

impl Provider for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn stream(&self, request: ChatRequest) -> ChatStream {
        let this = self.clone();
        let mut recorded = false;
        // The local stream ends only after the generation thread has stored its figures.
        let at_end = futures::stream::poll_fn(move |_| {
            if !recorded {
                recorded = true;
                if let Some(stats) = this.inner.last_stats() {
                    record(&this.data_dir, &this.model, &stats);
                }
            }
            Poll::Ready(None)
        });
        self.inner.stream(request).chain(at_end).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(generated: usize, secs: f64) -> GenStats {
        GenStats {
            prompt_tokens: 120,
            reused_tokens: 20,
            generated_tokens: generated,
            prompt_secs: 2.0,
            generation_secs: secs,
        }
    }

    #[test]
    fn a_finished_generation_is_recorded_per_model_and_a_tiny_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), "m", &stats(3, 1.0));
        assert!(read_all(dir.path()).is_empty(), "3 tokens say nothing about speed");
        record(dir.path(), "m", &stats(40, 4.0));
        record(dir.path(), "other", &stats(10, 1.0));
        let all = read_all(dir.path());
        assert_eq!(all["m"].tokens_per_s, 10.0);
        assert_eq!(all["m"].prompt_tokens_per_s, Some(50.0));
        assert_eq!(describe(&all["m"]), "10.0 tok/s (prompt 50 tok/s)");
        assert_eq!(all.len(), 2);
    }
}
