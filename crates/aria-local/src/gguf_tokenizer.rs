//! A `tokenizers::Tokenizer` built from a GGUF file's `tokenizer.ggml.*` metadata, plus the raw
//! bytes of every token (which constrained decoding and streaming need).
//!
//! Only byte-level BPE (`tokenizer.ggml.model == "gpt2"`) is supported; the pre-tokenizer is
//! chosen from `tokenizer.ggml.pre` the way llama.cpp does. SentencePiece GGUFs (`llama` model)
//! are refused with a clear error rather than tokenized wrongly.

use std::collections::HashMap;

use candle_core::quantized::gguf_file::{Content, Value};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::normalizers::unicode::NFC;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::tokenizer::SplitDelimiterBehavior;
use tokenizers::{AddedToken, Tokenizer};

use crate::error::LocalError;

const REGEX_LLAMA3: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const REGEX_QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The tokenizer of a GGUF model and the facts about its vocabulary the generator needs.
#[derive(Debug, Clone)]
pub struct GgufVocab {
    pub tokenizer: Tokenizer,
    /// The bytes each token stands for (control tokens: their text).
    pub pieces: Vec<Vec<u8>>,
    /// Control tokens (`<|im_start|>`, `<|endoftext|>`, ...): never text, never in JSON.
    pub special: Vec<bool>,
    /// Tokens that end a turn.
    pub stop: Vec<u32>,
    /// A token to put first, when the model wants one.
    pub bos: Option<u32>,
    by_text: HashMap<String, u32>,
}

impl GgufVocab {
    /// Builds the tokenizer from `content`'s metadata.
    pub fn from_gguf(content: &Content) -> Result<Self, LocalError> {
        let md = |k: &str| content.metadata.get(k);
        let kind = md("tokenizer.ggml.model").and_then(|v| v.to_string().ok()).cloned();
        if kind.as_deref() != Some("gpt2") {
            return Err(LocalError::Tokenizer {
                message: format!(
                    "tokenizer model {:?} is not supported; ARIA runs GGUF models with a byte-level BPE tokenizer (tokenizer.ggml.model = \"gpt2\": SmolLM, Qwen2, Llama 3, ...)",
                    kind.unwrap_or_default()
                ),
            });
        }
        let tokens = string_array(md("tokenizer.ggml.tokens"), "tokenizer.ggml.tokens")?;
        let merges = string_array(md("tokenizer.ggml.merges"), "tokenizer.ggml.merges")?
            .into_iter()
            .map(|m| {
                m.split_once(' ')
                    .map(|(a, b)| (a.to_owned(), b.to_owned()))
                    .ok_or_else(|| LocalError::tokenizer(format!("invalid merge `{m}`")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let types: Vec<u32> = match md("tokenizer.ggml.token_type").and_then(|v| v.to_vec().ok()) {
            Some(values) => values.iter().map(|v| as_u32(v).unwrap_or(1)).collect(),
            None => vec![1; tokens.len()],
        };
        let vocab: Vocab = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(LocalError::tokenizer)?;
        let mut tokenizer = Tokenizer::new(bpe);

        let pre = md("tokenizer.ggml.pre").and_then(|v| v.to_string().ok()).cloned();
        let pre = pre.unwrap_or_else(|| "default".to_owned());
        let (pre_tokenizer, nfc) = pre_tokenizer_for(&pre)?;
        if nfc {
            tokenizer.with_normalizer(Some(NFC)).map_err(LocalError::tokenizer)?;
        }
        tokenizer.with_pre_tokenizer(Some(pre_tokenizer));
        tokenizer.with_decoder(Some(ByteLevelDecoder::default()));

        // Control (3) and user-defined (4) tokens are matched whole in prompt text we build
        // ourselves; user-supplied text is encoded with special-token matching turned off.
        let mut special = vec![false; tokens.len()];
        let mut added = Vec::new();
        for (i, ty) in types.iter().enumerate() {
            if matches!(ty, 2..=5) {
                special[i] = *ty != 4;
                added.push(AddedToken::from(tokens[i].clone(), special[i]));
            }
        }
        tokenizer.add_special_tokens(added).map_err(LocalError::tokenizer)?;
        // Every string we encode is text; control tokens are inserted by id (see `prompt`).
        tokenizer.set_encode_special_tokens(true);

        let byte_of = unicode_to_byte();
        let pieces = tokens
            .iter()
            .zip(&types)
            .map(|(t, ty)| {
                if matches!(ty, 2..=5) {
                    t.as_bytes().to_vec()
                } else {
                    t.chars().map(|c| byte_of.get(&c).copied().unwrap_or(b'?')).collect()
                }
            })
            .collect();

        let id = |k: &str| md(k).and_then(|v| as_u32(v).ok());
        let by_text: HashMap<String, u32> =
            tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        let mut stop: Vec<u32> = Vec::new();
        stop.extend(id("tokenizer.ggml.eos_token_id"));
        stop.extend(id("tokenizer.ggml.eot_token_id"));
        for t in ["<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>"] {
            stop.extend(by_text.get(t).copied());
        }
        stop.sort_unstable();
        stop.dedup();
        let add_bos = md("tokenizer.ggml.add_bos_token").and_then(|v| v.to_bool().ok());
        let bos = if add_bos == Some(true) { id("tokenizer.ggml.bos_token_id") } else { None };
        Ok(GgufVocab { tokenizer, pieces, special, stop, bos, by_text })
    }

    /// The id of a token by its exact text (`<|im_start|>`).
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.by_text.get(text).copied()
    }

    /// Encodes plain text: control-token strings inside it are treated as ordinary text, so a
    /// user cannot forge `<|im_start|>system` by typing it.
    pub fn encode_text(&self, text: &str) -> Result<Vec<u32>, LocalError> {
        if text.is_empty() {
            return Ok(Vec::new());
        }
        let enc = self.tokenizer.encode(text, false).map_err(LocalError::tokenizer)?;
        Ok(enc.get_ids().to_vec())
    }
}

fn pre_tokenizer_for(pre: &str) -> Result<(PreTokenizerWrapper, bool), LocalError> {
    let byte_level = |regex| ByteLevel::new(false, true, regex);
    let split = |regex: &str| -> Result<PreTokenizerWrapper, LocalError> {
        let split = Split::new(
            SplitPattern::Regex(regex.to_owned()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(LocalError::tokenizer)?;
        Ok(Sequence::new(vec![split.into(), byte_level(false).into()]).into())
    };
    Ok(match pre {
        // SmolLM and StarCoder: every digit on its own, then GPT-2's byte-level split.
        "smollm" | "starcoder" | "refact" => {
            (Sequence::new(vec![Digits::new(true).into(), byte_level(true).into()]).into(), false)
        }
        "gpt2" | "default" | "gpt-2" => (byte_level(true).into(), false),
        "llama3" | "llama-bpe" | "smaug-bpe" | "lfm2" => (split(REGEX_LLAMA3)?, false),
        "qwen2" => (split(REGEX_QWEN2)?, true),
        other => {
            return Err(LocalError::Tokenizer {
                message: format!(
                    "pre-tokenizer `{other}` (tokenizer.ggml.pre) is not supported yet; supported: smollm, starcoder, gpt2, llama-bpe, qwen2"
                ),
            });
        }
    })
}

fn string_array(value: Option<&Value>, key: &str) -> Result<Vec<String>, LocalError> {
    let values = value
        .and_then(|v| v.to_vec().ok())
        .ok_or_else(|| LocalError::tokenizer(format!("the GGUF has no `{key}` array")))?;
    values
        .iter()
        .map(|v| {
            v.to_string()
                .cloned()
                .map_err(|_| LocalError::tokenizer(format!("`{key}` holds a non-string")))
        })
        .collect()
}

fn as_u32(v: &Value) -> Result<u32, LocalError> {
    Ok(match v {
        Value::U8(x) => u32::from(*x),
        Value::I8(x) => *x as u32,
        Value::U16(x) => u32::from(*x),
        Value::I16(x) => *x as u32,
        Value::U32(x) => *x,
        Value::I32(x) => *x as u32,
        Value::U64(x) => *x as u32,
        Value::I64(x) => *x as u32,
        other => return Err(LocalError::tokenizer(format!("expected an integer, got {other:?}"))),
    })
}

/// GPT-2's byte-to-unicode table, inverted: the character a BPE token uses for each byte.
fn unicode_to_byte() -> HashMap<char, u8> {
    let mut printable: Vec<u32> = (u32::from(b'!')..=u32::from(b'~')).collect();
    printable.extend(0xA1..=0xAC);
    printable.extend(0xAE..=0xFF);
    let mut map = HashMap::new();
    let mut extra = 0u32;
    for b in 0u32..256 {
        let c = if printable.contains(&b) {
            b
        } else {
            extra += 1;
            255 + extra
        };
        if let Some(ch) = char::from_u32(c) {
            map.insert(ch, b as u8);
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_table_covers_every_byte_once() {
        let map = unicode_to_byte();
        assert_eq!(map.len(), 256);
        assert_eq!(map.get(&'Ġ'), Some(&b' '));
        assert_eq!(map.get(&'Ċ'), Some(&b'\n'));
        assert_eq!(map.get(&'a'), Some(&b'a'));
    }
}
