//! What a GGUF chat model is, read from its metadata: the architecture and its shape.
//!
//! Two architectures share one forward pass ([`crate::llama`]); they differ only in the facts
//! kept here. `llama` (SmolLM2, Llama, TinyLlama) rotates interleaved pairs and has no biases;
//! `qwen2` (Qwen2 and Qwen2.5) rotates the two halves of each head ("NeoX" style), adds a bias
//! to the query, key and value projections, and usually ties its output layer to the token
//! embedding. Every other number comes from `{architecture}.*` metadata keys, named as
//! llama.cpp names them.

use std::collections::HashMap;

use candle_core::quantized::gguf_file::Value;

/// The longest context the embedded engine runs, whatever the file claims. The KV cache grows
/// with the conversation, so this bounds memory, it does not reserve it.
pub(crate) const MAX_CONTEXT: usize = 32_768;

/// Context assumed when the file does not say.
const DEFAULT_CONTEXT: usize = 2048;

/// The model families the forward pass knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arch {
    Llama,
    Qwen2,
}

/// How rotary position embedding pairs the values of a head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RopeStyle {
    /// `(x[2i], x[2i+1])`: llama's convention (ggml's `LLAMA_ROPE_TYPE_NORM`).
    Interleaved,
    /// `(x[i], x[i + d/2])`: GPT-NeoX's, used by Qwen2 (ggml's `LLAMA_ROPE_TYPE_NEOX`).
    NeoX,
}

impl Arch {
    /// The architecture named by `general.architecture`.
    pub(crate) fn from_name(name: &str) -> Result<Self, String> {
        match name {
            "llama" => Ok(Arch::Llama),
            "qwen2" => Ok(Arch::Qwen2),
            other => Err(format!(
                "architecture `{other}` is not supported by the embedded runtime (supported: `llama` for SmolLM, Llama, TinyLlama; `qwen2` for Qwen2 and Qwen2.5)"
            )),
        }
    }

    /// The prefix of this architecture's metadata keys.
    pub(crate) fn prefix(self) -> &'static str {
        match self {
            Arch::Llama => "llama",
            Arch::Qwen2 => "qwen2",
        }
    }

    pub(crate) fn rope_style(self) -> RopeStyle {
        match self {
            Arch::Llama => RopeStyle::Interleaved,
            Arch::Qwen2 => RopeStyle::NeoX,
        }
    }

    /// Whether the query, key and value projections must carry biases (`blk.N.attn_q.bias`).
    /// Other architectures use them when the file has them.
    pub(crate) fn requires_qkv_bias(self) -> bool {
        self == Arch::Qwen2
    }
}

/// The shape of a model, from its metadata.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hparams {
    pub(crate) arch: Arch,
    pub(crate) n_layer: usize,
    pub(crate) n_embd: usize,
    pub(crate) n_head: usize,
    pub(crate) n_kv_head: usize,
    pub(crate) head_dim: usize,
    pub(crate) eps: f32,
    pub(crate) freq_base: f32,
    /// Tokens the model can attend to: the file's training context, at most [`MAX_CONTEXT`].
    pub(crate) context: usize,
}

impl Hparams {
    /// Reads and checks the shape; the error says which key is missing or what does not fit.
    pub(crate) fn from_metadata(md: &HashMap<String, Value>) -> Result<Self, String> {
        let arch = md
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .ok_or("the metadata `general.architecture` is missing")?;
        let arch = Arch::from_name(arch)?;
        let p = arch.prefix();
        let get = |key: &str| md.get(&format!("{p}.{key}"));
        let int = |key: &str| -> Result<Option<usize>, String> {
            get(key).map(|v| as_usize(v).map_err(|e| format!("`{p}.{key}`: {e}"))).transpose()
        };
        let need = |key: &str| -> Result<usize, String> {
            int(key)?.ok_or_else(|| format!("the metadata `{p}.{key}` is missing"))
        };
        let n_head = need("attention.head_count")?;
        let n_kv_head = int("attention.head_count_kv")?.unwrap_or(n_head);
        let n_layer = need("block_count")?;
        let n_embd = need("embedding_length")?;
        let eps = get("attention.layer_norm_rms_epsilon")
            .ok_or_else(|| {
                format!("the metadata `{p}.attention.layer_norm_rms_epsilon` is missing")
            })?
            .to_f32()
            .map_err(|e| format!("the RMS norm epsilon: {e}"))?;
        let freq_base = match get("rope.freq_base") {
            Some(v) => v.to_f32().map_err(|e| format!("`{p}.rope.freq_base`: {e}"))?,
            None => 10_000.0,
        };
        if n_head == 0 || n_kv_head == 0 || !n_head.is_multiple_of(n_kv_head) {
            return Err(format!(
                "{n_head} attention heads cannot share {n_kv_head} key/value heads"
            ));
        }
        if int("expert_count")?.unwrap_or(0) > 1 {
            return Err("mixture-of-experts models are not supported".into());
        }
        let head_dim = n_embd / n_head;
        let rope_dim = int("rope.dimension_count")?.unwrap_or(head_dim);
        if head_dim * n_head != n_embd || rope_dim != head_dim || !head_dim.is_multiple_of(2) {
            return Err(format!(
                "unsupported shape: {n_embd} wide, {n_head} heads, rotary dimension {rope_dim}"
            ));
        }
        let context = int("context_length")?.unwrap_or(DEFAULT_CONTEXT).clamp(1, MAX_CONTEXT);
        Ok(Hparams { arch, n_layer, n_embd, n_head, n_kv_head, head_dim, eps, freq_base, context })
    }
}

fn as_usize(v: &Value) -> Result<usize, String> {
    let n = match v {
        Value::U8(x) => u64::from(*x),
        Value::U16(x) => u64::from(*x),
        Value::U32(x) => u64::from(*x),
        Value::U64(x) => *x,
        Value::I8(x) => u64::try_from(*x).map_err(|e| e.to_string())?,
        Value::I16(x) => u64::try_from(*x).map_err(|e| e.to_string())?,
        Value::I32(x) => u64::try_from(*x).map_err(|e| e.to_string())?,
        Value::I64(x) => u64::try_from(*x).map_err(|e| e.to_string())?,
        other => return Err(format!("expected an integer, got {other:?}")),
    };
    usize::try_from(n).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qwen_metadata() -> HashMap<String, Value> {
        let mut md = HashMap::new();
        md.insert("general.architecture".into(), Value::String("qwen2".into()));
        md.insert("qwen2.block_count".into(), Value::U32(24));
        md.insert("qwen2.context_length".into(), Value::U32(32_768));
        md.insert("qwen2.embedding_length".into(), Value::U32(896));
        md.insert("qwen2.attention.head_count".into(), Value::U32(14));
        md.insert("qwen2.attention.head_count_kv".into(), Value::U32(2));
        md.insert("qwen2.rope.freq_base".into(), Value::F32(1_000_000.0));
        md.insert("qwen2.attention.layer_norm_rms_epsilon".into(), Value::F32(1e-6));
        md
    }

    #[test]
    fn qwen2_metadata_gives_neox_rope_gqa_and_its_own_keys() {
        let hp = Hparams::from_metadata(&qwen_metadata()).unwrap();
        assert_eq!(
            hp,
            Hparams {
                arch: Arch::Qwen2,
                n_layer: 24,
                n_embd: 896,
                n_head: 14,
                n_kv_head: 2,
                head_dim: 64,
                eps: 1e-6,
                freq_base: 1_000_000.0,
                context: 32_768,
            }
        );
        assert_eq!(hp.arch.rope_style(), RopeStyle::NeoX);
        assert!(hp.arch.requires_qkv_bias());
        assert_eq!(Arch::Llama.rope_style(), RopeStyle::Interleaved);
    }

    #[test]
    fn llama_keys_are_read_under_their_prefix_and_the_context_is_capped() {
        let md: HashMap<String, Value> = qwen_metadata()
            .into_iter()
            .map(|(k, v)| (k.replacen("qwen2.", "llama.", 1), v))
            .chain([
                ("general.architecture".to_owned(), Value::String("llama".into())),
                ("llama.context_length".to_owned(), Value::U64(131_072)),
                ("llama.rope.dimension_count".to_owned(), Value::U32(64)),
            ])
            .collect();
        let hp = Hparams::from_metadata(&md).unwrap();
        assert_eq!((hp.arch, hp.context, hp.head_dim), (Arch::Llama, MAX_CONTEXT, 64));
    }

    #[test]
    fn unknown_architectures_and_bad_shapes_are_refused_with_the_reason() {
        let mut md = qwen_metadata();
        md.insert("general.architecture".into(), Value::String("gemma".into()));
        let err = Hparams::from_metadata(&md).unwrap_err();
        assert!(err.contains("`gemma` is not supported"), "{err}");

        let mut md = qwen_metadata();
        md.insert("qwen2.attention.head_count_kv".into(), Value::U32(3));
        let err = Hparams::from_metadata(&md).unwrap_err();
        assert!(err.contains("14 attention heads cannot share 3"), "{err}");

        let mut md = qwen_metadata();
        md.remove("qwen2.attention.layer_norm_rms_epsilon");
        let err = Hparams::from_metadata(&md).unwrap_err();
        assert!(err.contains("layer_norm_rms_epsilon` is missing"), "{err}");
    }
}
