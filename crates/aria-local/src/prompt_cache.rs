//! The model state after the system turn, kept on disk between processes.
//!
//! Every `aria run` is a new process, and the system turn (instructions and the tools' list)
//! is most of the first prompt: with the 1.5B model, seconds of prompt processing before the
//! first token. Its keys and values are saved after they are computed and read back by the
//! next process whose prompt starts the same way, so only what differs is run again. The file
//! belongs to one model file (its size and modification time are recorded and checked) and
//! holds the token ids it was computed from; the longest run of them the new prompt starts
//! with is used, so a reused state is exactly what running those tokens would give.
//!
//! Format (little-endian): magic, model size, model mtime (ns), layers, width, tokens, the
//! token ids, then per layer the keys and the values (`tokens × width` f32 each).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::llama::KvCache;

const MAGIC: &[u8; 8] = b"ARIAKV01";
/// Larger files are not read (a corrupt length must not make us allocate gigabytes).
const MAX_TOKENS: u32 = 32_768;

/// Where one model's system-turn state is kept, and which model file it belongs to.
#[derive(Debug, Clone)]
pub(crate) struct PromptCache {
    path: PathBuf,
    identity: [u64; 2],
}

impl PromptCache {
    /// The cache for `model` in `dir` (`None` when the model file cannot be inspected).
    pub(crate) fn new(dir: &Path, model: &Path) -> Option<Self> {
        let meta = std::fs::metadata(model).ok()?;
        let mtime = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos() as u64;
        let name = model.file_name()?.to_string_lossy();
        Some(PromptCache { path: dir.join(format!("{name}.kv")), identity: [meta.len(), mtime] })
    }

    /// The saved tokens and state, when the file is there, whole, and for this model shape.
    pub(crate) fn load(&self, layers: usize, width: usize) -> Option<(Vec<u32>, KvCache)> {
        let file = File::open(&self.path).ok()?;
        match self.read(&mut BufReader::new(file), layers, width) {
            Ok(found) => found,
            Err(e) => {
                tracing::debug!(path = %self.path.display(), "prompt cache not used: {e}");
                None
            }
        }
    }

    fn read(
        &self,
        r: &mut impl Read,
        layers: usize,
        width: usize,
    ) -> io::Result<Option<(Vec<u32>, KvCache)>> {
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)?;
        let header = [read_u64(r)?, read_u64(r)?, u64::from(read_u32(r)?), u64::from(read_u32(r)?)];
        if &magic != MAGIC
            || header != [self.identity[0], self.identity[1], layers as u64, width as u64]
        {
            return Ok(None);
        }
        let n = read_u32(r)?;
        if n == 0 || n > MAX_TOKENS {
            return Ok(None);
        }
        let n = n as usize;
        let tokens = read_u32s(r, n)?;
        let mut data = Vec::with_capacity(layers);
        for _ in 0..layers {
            data.push((read_f32s(r, n * width)?, read_f32s(r, n * width)?));
        }
        if r.read(&mut [0u8; 1])? != 0 {
            return Ok(None);
        }
        Ok(Some((tokens, KvCache::from_layers(n, data))))
    }

    /// Saves `tokens` and their state (written aside and renamed into place, so a reader never
    /// sees half a file). Failing to save only costs the next process time: logged, not fatal.
    pub(crate) fn save(&self, tokens: &[u32], cache: &KvCache, layers: usize, width: usize) {
        if let Err(e) = self.write(tokens, cache, layers, width) {
            tracing::debug!(path = %self.path.display(), "prompt cache not saved: {e}");
        }
    }

    fn write(
        &self,
        tokens: &[u32],
        cache: &KvCache,
        layers: usize,
        width: usize,
    ) -> io::Result<()> {
        if tokens.is_empty() || tokens.len() > MAX_TOKENS as usize || cache.len() != tokens.len() {
            return Ok(());
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        {
            let mut w = BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
            w.write_all(MAGIC)?;
            for v in self.identity {
                w.write_all(&v.to_le_bytes())?;
            }
            for v in [layers as u32, width as u32, tokens.len() as u32] {
                w.write_all(&v.to_le_bytes())?;
            }
            for t in tokens {
                w.write_all(&t.to_le_bytes())?;
            }
            for (k, v) in cache.layers(width) {
                for x in k.iter().chain(v) {
                    w.write_all(&x.to_le_bytes())?;
                }
            }
            w.flush()?;
        }
        tmp.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn read_u32s(r: &mut impl Read, n: usize) -> io::Result<Vec<u32>> {
    let mut bytes = vec![0u8; n * 4];
    r.read_exact(&mut bytes)?;
    Ok(bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

fn read_f32s(r: &mut impl Read, n: usize) -> io::Result<Vec<f32>> {
    let mut bytes = vec![0u8; n * 4];
    r.read_exact(&mut bytes)?;
    Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(len: usize, layers: usize, width: usize) -> KvCache {
        let data = (0..layers)
            .map(|l| {
                let k = (0..len * width).map(|i| (l * 1000 + i) as f32 * 0.5).collect();
                let v = (0..len * width).map(|i| -((l * 1000 + i) as f32)).collect();
                (k, v)
            })
            .collect();
        KvCache::from_layers(len, data)
    }

    fn flat(cache: &KvCache, width: usize) -> Vec<f32> {
        cache
            .layers(width)
            .flat_map(|(k, v)| k.iter().chain(v).copied().collect::<Vec<_>>())
            .collect()
    }

    #[test]
    fn a_saved_state_comes_back_only_for_the_same_model_file_and_shape() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.gguf");
        std::fs::write(&model, b"weights").unwrap();
        let cache = PromptCache::new(&dir.path().join("state"), &model).unwrap();
        assert!(cache.load(2, 3).is_none(), "nothing saved yet");
        let saved = state(4, 2, 3);
        cache.save(&[7, 8, 9, 10], &saved, 2, 3);
        let (tokens, loaded) = cache.load(2, 3).unwrap();
        assert_eq!(tokens, [7, 8, 9, 10]);
        assert_eq!((loaded.len(), flat(&loaded, 3)), (4, flat(&saved, 3)));
        // Another shape, or the model file changed: not used.
        assert!(cache.load(2, 4).is_none() && cache.load(3, 3).is_none());
        std::fs::write(&model, b"other weights").unwrap();
        let changed = PromptCache::new(&dir.path().join("state"), &model).unwrap();
        assert!(changed.load(2, 3).is_none());
    }

    #[test]
    fn a_damaged_file_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.gguf");
        std::fs::write(&model, b"weights").unwrap();
        let cache = PromptCache::new(dir.path(), &model).unwrap();
        cache.save(&[1, 2], &state(2, 1, 2), 1, 2);
        let file = dir.path().join("m.gguf.kv");
        let whole = std::fs::read(&file).unwrap();
        std::fs::write(&file, &whole[..whole.len() - 4]).unwrap();
        assert!(cache.load(1, 2).is_none(), "cut short");
        let mut longer = whole.clone();
        longer.push(0);
        std::fs::write(&file, &longer).unwrap();
        assert!(cache.load(1, 2).is_none(), "trailing bytes");
        let mut huge = whole;
        huge[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
        std::fs::write(&file, &huge).unwrap();
        assert!(cache.load(1, 2).is_none(), "an absurd token count");
    }
}
