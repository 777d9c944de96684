//! Packs: a tiny random int8 pack against candle's `BertModel` on the same weights (dequantized,
//! positions shifted by the pack's offset), and every way a pack can be malformed.

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use serde_json::json;

use super::*;
use crate::bert::{Scratch, Seq};

const HIDDEN: usize = 8;
const INTER: usize = 16;
const VOCAB: usize = 20;
const OFFSET: usize = 2;
/// Positions in the pack's table, the offset's two included.
const POSITIONS: usize = 18;
const GROUP: usize = 4;

/// One pack tensor: its name, shape, values, and whether it is stored as int8.
struct Part {
    name: String,
    shape: Vec<usize>,
    values: Vec<f32>,
    int8: bool,
}

/// The tiny model's tensors under their pack names, values from a fixed-seed generator; the
/// int8 ones already hold what their codes and scales decode to.
fn parts() -> Vec<Part> {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    };
    let mut part = |name: &str, shape: Vec<usize>, int8: bool| {
        let n: usize = shape.iter().product();
        let norm = name.ends_with("ln.w");
        let values = (0..n).map(|_| if norm { 1.0 + 0.3 * next() } else { 1.5 * next() });
        let values: Vec<f32> = values.collect();
        let values = if int8 { quantized(&values).0 } else { values };
        Part { name: name.to_owned(), shape, values, int8 }
    };
    let mut t = vec![
        part("word_emb", vec![VOCAB, HIDDEN], true),
        part("pos_emb", vec![POSITIONS, HIDDEN], false),
        part("type_emb", vec![2, HIDDEN], false),
        part("emb_ln.w", vec![HIDDEN], false),
        part("emb_ln.b", vec![HIDDEN], false),
    ];
    for l in 0..2 {
        for (name, shape, int8) in [
            ("qkv.w", vec![3 * HIDDEN, HIDDEN], true),
            ("qkv.b", vec![3 * HIDDEN], false),
            ("ao.w", vec![HIDDEN, HIDDEN], true),
            ("ao.b", vec![HIDDEN], false),
            ("aln.w", vec![HIDDEN], false),
            ("aln.b", vec![HIDDEN], false),
            ("f1.w", vec![INTER, HIDDEN], true),
            ("f1.b", vec![INTER], false),
            ("f2.w", vec![HIDDEN, INTER], true),
            ("f2.b", vec![HIDDEN], false),
            ("fln.w", vec![HIDDEN], false),
            ("fln.b", vec![HIDDEN], false),
        ] {
            t.push(part(&format!("l{l}.{name}"), shape, int8));
        }
    }
    t
}

/// Symmetric int8 codes with one scale per [`GROUP`] values: (decoded values, stored bytes).
fn quantized(values: &[f32]) -> (Vec<f32>, Vec<u8>) {
    let mut codes = Vec::new();
    let mut scales = Vec::new();
    let mut decoded = Vec::new();
    for group in values.chunks(GROUP) {
        let scale = group.iter().fold(0.0f32, |m, v| m.max(v.abs())) / 127.0;
        for &v in group {
            let code = (v / scale).round().clamp(-127.0, 127.0) as i8;
            codes.push(code.to_le_bytes()[0]);
            decoded.push(f32::from(code) * scale);
        }
        scales.extend(scale.to_le_bytes());
    }
    codes.extend(scales);
    (decoded, codes)
}

fn header(parts: &[Part], lens: &[usize], meta: serde_json::Value) -> Vec<u8> {
    let tensors: Vec<_> = parts
        .iter()
        .zip(lens)
        .map(|(p, len)| {
            json!({"name": p.name, "dtype": if p.int8 { "i8" } else { "f32" }, "shape": p.shape,
                   "len": len, "group": if p.int8 { GROUP } else { 0 }})
        })
        .collect();
    serde_json::to_vec(&json!({
        "format": 1, "meta": meta,
        "arch": {"hidden": HIDDEN, "layers": 2, "heads": 2, "intermediate": INTER, "vocab": VOCAB,
                 "max_positions": POSITIONS, "type_vocab": 2, "layer_norm_eps": 1e-12,
                 "position_offset": OFFSET},
        "quantization": "int8", "tokenizer_len": 2, "tensors": tensors
    }))
    .unwrap()
}

fn meta() -> serde_json::Value {
    json!({"model": "tiny", "pooling": "cls", "normalize": true, "query_prefix": "",
           "passage_prefix": "", "max_length": 512})
}

/// The pack's bytes, built from `parts` with `meta`.
fn pack_bytes(parts: &[Part], meta: serde_json::Value) -> Vec<u8> {
    let blobs: Vec<Vec<u8>> = parts
        .iter()
        .map(|p| {
            if p.int8 {
                quantized(&p.values).1
            } else {
                p.values.iter().flat_map(|v| v.to_le_bytes()).collect()
            }
        })
        .collect();
    let lens: Vec<usize> = blobs.iter().map(Vec::len).collect();
    let header = header(parts, &lens, meta);
    let mut out = b"HMSEMB01".to_vec();
    out.extend((header.len() as u64).to_le_bytes());
    out.extend(header);
    out.extend(b"{}");
    blobs.into_iter().for_each(|b| out.extend(b));
    out
}

/// candle's BERT on the same weights: query/key/value split out of the fused tensor, and the
/// position table from the pack's offset on.
fn candle_model(parts: &[Part]) -> BertModel {
    let by_name: HashMap<&str, &Part> = parts.iter().map(|p| (p.name.as_str(), p)).collect();
    let tensor = |values: &[f32], shape: &[usize]| {
        Tensor::from_vec(values.to_vec(), shape, &Device::Cpu).unwrap()
    };
    let mut map: HashMap<String, Tensor> = HashMap::new();
    let positions = &by_name["pos_emb"].values[OFFSET * HIDDEN..];
    map.insert(
        "embeddings.position_embeddings.weight".into(),
        tensor(positions, &[POSITIONS - OFFSET, HIDDEN]),
    );
    for (bert, pack) in [
        ("embeddings.word_embeddings.weight", "word_emb"),
        ("embeddings.token_type_embeddings.weight", "type_emb"),
        ("embeddings.LayerNorm.weight", "emb_ln.w"),
        ("embeddings.LayerNorm.bias", "emb_ln.b"),
    ] {
        map.insert(bert.into(), tensor(&by_name[pack].values, &by_name[pack].shape));
    }
    for l in 0..2 {
        let p = format!("encoder.layer.{l}");
        for (i, which) in ["query", "key", "value"].iter().enumerate() {
            let w = &by_name[format!("l{l}.qkv.w").as_str()].values;
            let b = &by_name[format!("l{l}.qkv.b").as_str()].values;
            let rows = HIDDEN * HIDDEN;
            map.insert(
                format!("{p}.attention.self.{which}.weight"),
                tensor(&w[i * rows..(i + 1) * rows], &[HIDDEN, HIDDEN]),
            );
            map.insert(
                format!("{p}.attention.self.{which}.bias"),
                tensor(&b[i * HIDDEN..(i + 1) * HIDDEN], &[HIDDEN]),
            );
        }
        for (bert, pack) in [
            ("attention.output.dense", "ao"),
            ("attention.output.LayerNorm", "aln"),
            ("intermediate.dense", "f1"),
            ("output.dense", "f2"),
            ("output.LayerNorm", "fln"),
        ] {
            for (kind, short) in [("weight", "w"), ("bias", "b")] {
                let part = by_name[format!("l{l}.{pack}.{short}").as_str()];
                map.insert(format!("{p}.{bert}.{kind}"), tensor(&part.values, &part.shape));
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.safetensors");
    candle_core::safetensors::save(&map, &path).unwrap();
    let config: Config = serde_json::from_value(json!({
        "vocab_size": VOCAB, "hidden_size": HIDDEN, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": INTER, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "max_position_embeddings": POSITIONS - OFFSET,
        "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12,
        "pad_token_id": 0, "position_embedding_type": "absolute", "model_type": "bert"
    }))
    .unwrap();
    let weights = std::fs::read(path).unwrap();
    let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).unwrap();
    BertModel::load(vb, &config).unwrap()
}

#[test]
fn a_tiny_int8_pack_matches_candles_bert_on_the_decoded_weights() {
    let parts = parts();
    let pack = read(Path::new("tiny.hmsemb"), &pack_bytes(&parts, meta())).unwrap();
    assert_eq!(pack.pooling, Pooling::Cls);
    assert_eq!(pack.max_tokens, POSITIONS - OFFSET, "capped by the position table");
    assert_eq!(pack.tokenizer_json, b"{}");
    let reference = candle_model(&parts);
    for len in [1usize, 5, POSITIONS - OFFSET] {
        let ids: Vec<u32> = (0..len).map(|i| ((i * 7 + 3) % VOCAB) as u32).collect();
        let types = vec![0u32; len];
        let mut scratch = Scratch::default();
        let got = pack.model.forward(&[Seq { ids: &ids, type_ids: &types }], &mut scratch).unwrap();
        let t = |v: &[u32]| Tensor::from_slice(v, (1, v.len()), &Device::Cpu).unwrap();
        let want = reference.forward(&t(&ids), &t(&types), None).unwrap();
        let want = want.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let diff = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(diff < 2e-5, "{len} tokens: max abs diff {diff}");
    }
    // One token more than the table holds after the offset is an error, not a panic.
    let ids = vec![1u32; POSITIONS - OFFSET + 1];
    let mut scratch = Scratch::default();
    let long = pack.model.forward(&[Seq { ids: &ids, type_ids: &ids }], &mut scratch);
    assert!(long.is_err());
}

#[test]
fn int8_weights_kept_as_codes_give_exactly_what_their_decoded_floats_give() {
    let parts = parts();
    let coded = read(Path::new("tiny.hmsemb"), &pack_bytes(&parts, meta())).unwrap();
    // The same values stored as floats take the F32 path.
    let floats: Vec<Part> = parts.into_iter().map(|p| Part { int8: false, ..p }).collect();
    let plain = read(Path::new("plain.hmsemb"), &pack_bytes(&floats, meta())).unwrap();
    assert_eq!(coded.model.int8_linears(), 2 * 4, "every linear weight of both layers");
    assert_eq!(plain.model.int8_linears(), 0);
    // Every tile height (1 to 6 rows), and more than one tile, alone and batched.
    let ids: Vec<Vec<u32>> = (1..=POSITIONS - OFFSET)
        .map(|len| (0..len).map(|i| ((i * 5 + len) % VOCAB) as u32).collect())
        .collect();
    let types: Vec<Vec<u32>> = ids.iter().map(|i| vec![0; i.len()]).collect();
    let seqs: Vec<Seq<'_>> =
        ids.iter().zip(&types).map(|(ids, types)| Seq { ids, type_ids: types }).collect();
    for batch in seqs.chunks(1).chain([&seqs[..]]) {
        let (mut a, mut b) = (Scratch::default(), Scratch::default());
        let got = coded.model.forward(batch, &mut a).unwrap();
        let want = plain.model.forward(batch, &mut b).unwrap();
        assert_eq!(got, want, "{} sequences from {} tokens", batch.len(), batch[0].ids.len());
    }
}

fn read_error(bytes: &[u8]) -> String {
    match read(Path::new("bad.hmsemb"), bytes) {
        Ok(_) => panic!("a malformed pack was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_malformed_pack_is_a_bad_model_error_that_says_what_is_wrong() {
    let good = pack_bytes(&parts(), meta());
    assert!(read_error(b"GGUF....").contains("HMSEMB01"));
    assert!(read_error(&good[..12]).contains("HMSEMB01"));
    let mut huge = good.clone();
    huge[8..16].copy_from_slice(&(u64::MAX).to_le_bytes());
    assert!(read_error(&huge).contains("header claims"));
    assert!(read_error(&good[..good.len() - 3]).contains("cut short"));
    let mut extra = good.clone();
    extra.extend(b"xx");
    assert!(read_error(&extra).contains("2 bytes follow the last tensor"));

    let mut missing = parts();
    missing.retain(|p| p.name != "l1.f2.w");
    assert!(read_error(&pack_bytes(&missing, meta())).contains("l1.f2.w is missing"));
    let mut shape = parts();
    shape.iter_mut().find(|p| p.name == "l0.ao.b").unwrap().shape = vec![2, 4];
    assert!(read_error(&pack_bytes(&shape, meta())).contains("l0.ao.b has shape [2, 4]"));
    let mut twice = parts();
    let copy =
        Part { name: "emb_ln.b".into(), shape: vec![HIDDEN], values: vec![0.0; 8], int8: false };
    twice.push(copy);
    assert!(read_error(&pack_bytes(&twice, meta())).contains("appears twice"));

    let mut m = meta();
    m["pooling"] = json!("max");
    assert!(read_error(&pack_bytes(&parts(), m)).contains("pooling \"max\""));
    let mut m = meta();
    m["query_prefix"] = json!("query: ");
    assert!(read_error(&pack_bytes(&parts(), m)).contains("prefixes"));
    let mut m = meta();
    m["normalize"] = json!(false);
    assert!(read_error(&pack_bytes(&parts(), m)).contains("normalised"));
}

#[test]
fn a_tensor_whose_size_disagrees_with_its_header_is_refused() {
    let parts = parts();
    let bytes = pack_bytes(&parts, meta());
    // Rewrite the header so the first tensor claims one byte less (and the second one more):
    // the file's total length still adds up, the first tensor's does not.
    let header_len = u64::from_le_bytes(bytes[8..16].try_into().unwrap()) as usize;
    let mut header: serde_json::Value =
        serde_json::from_slice(&bytes[16..16 + header_len]).unwrap();
    let first = header["tensors"][0]["len"].as_u64().unwrap();
    let second = header["tensors"][1]["len"].as_u64().unwrap();
    header["tensors"][0]["len"] = json!(first - 1);
    header["tensors"][1]["len"] = json!(second + 1);
    let header = serde_json::to_vec(&header).unwrap();
    let mut out = b"HMSEMB01".to_vec();
    out.extend((header.len() as u64).to_le_bytes());
    out.extend(header);
    out.extend(&bytes[16 + header_len..]);
    let err = read_error(&out);
    assert!(err.contains("tensor word_emb holds"), "{err}");
    // An int8 group that does not divide the tensor.
    let mut header: serde_json::Value =
        serde_json::from_slice(&bytes[16..16 + header_len]).unwrap();
    header["tensors"][0]["group"] = json!(7);
    let header = serde_json::to_vec(&header).unwrap();
    let mut out = b"HMSEMB01".to_vec();
    out.extend((header.len() as u64).to_le_bytes());
    out.extend(header);
    out.extend(&bytes[16 + header_len..]);
    assert!(read_error(&out).contains("group that divides"));
}
