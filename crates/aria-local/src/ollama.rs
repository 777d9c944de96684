//! Reading models a user already has in Ollama's local store, in place (no copy).
//!
//! Ollama keeps `manifests/<registry>/<namespace>/<name>/<tag>` JSON files whose layer with media
//! type `application/vnd.ollama.image.model` names a blob `blobs/sha256-<hex>`; that blob is a
//! plain GGUF file.

use std::path::{Path, PathBuf};

use crate::error::LocalError;

const MODEL_MEDIA_TYPE: &str = "application/vnd.ollama.image.model";

/// `$OLLAMA_MODELS`, else `~/.ollama/models`.
pub fn default_store() -> PathBuf {
    if let Some(dir) = std::env::var_os("OLLAMA_MODELS") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    home.join(".ollama").join("models")
}

/// The GGUF blob of `name[:tag]` (`smollm2:135m`, `library/llama3`, `host/ns/name:tag`).
pub fn blob_path(store: &Path, spec: &str) -> Result<PathBuf, LocalError> {
    let (name, tag) = spec.rsplit_once(':').unwrap_or((spec, "latest"));
    let parts: Vec<&str> = name.split('/').collect();
    let rel: PathBuf = match parts.as_slice() {
        [n] => ["registry.ollama.ai", "library", n].iter().collect(),
        [ns, n] => ["registry.ollama.ai", ns, n].iter().collect(),
        [host, ns, n] => [host, ns, n].iter().collect(),
        _ => PathBuf::from(name),
    };
    let manifest_path = store.join("manifests").join(rel).join(tag);
    let text = std::fs::read_to_string(&manifest_path).map_err(|e| {
        LocalError::io(
            "could not read the Ollama manifest (is the model pulled in Ollama?)",
            &manifest_path,
            e,
        )
    })?;
    let manifest: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| LocalError::BadModel {
            path: manifest_path.clone(),
            message: format!("not an Ollama manifest: {e}"),
        })?;
    let digest = manifest["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["mediaType"] == MODEL_MEDIA_TYPE)
        .and_then(|l| l["digest"].as_str())
        .ok_or_else(|| LocalError::BadModel {
            path: manifest_path.clone(),
            message: "the manifest has no model layer".into(),
        })?;
    let blob = store.join("blobs").join(digest.replace(':', "-"));
    if blob.is_file() {
        Ok(blob)
    } else {
        Err(LocalError::io(
            "the Ollama manifest names a missing blob",
            blob,
            std::io::Error::from(std::io::ErrorKind::NotFound),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_a_manifest_to_its_model_blob() {
        let store = tempfile::tempdir().unwrap();
        let mdir = store.path().join("manifests/registry.ollama.ai/library/smollm2");
        std::fs::create_dir_all(&mdir).unwrap();
        std::fs::create_dir_all(store.path().join("blobs")).unwrap();
        std::fs::write(
            mdir.join("135m"),
            r#"{"layers":[{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:aa"},
                {"mediaType":"application/vnd.ollama.image.model","digest":"sha256:bb"}]}"#,
        )
        .unwrap();
        std::fs::write(store.path().join("blobs/sha256-bb"), b"GGUF").unwrap();
        let path = blob_path(store.path(), "smollm2:135m").unwrap();
        assert_eq!(path, store.path().join("blobs/sha256-bb"));
        let missing = blob_path(store.path(), "smollm2").unwrap_err().to_string();
        assert!(missing.contains("Ollama manifest"), "{missing}");
    }
}
