//! The BERT forward pass against candle's `BertModel` on a tiny random model (no files needed),
//! its error paths, and the `erf`/`exp` approximations against libm.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};

use super::*;

const HIDDEN: usize = 8;
const INTER: usize = 16;
const VOCAB: usize = 20;
const POSITIONS: usize = 16;

fn config_json() -> String {
    serde_json::json!({
        "vocab_size": VOCAB, "hidden_size": HIDDEN, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": INTER, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "max_position_embeddings": POSITIONS, "type_vocab_size": 2,
        "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0,
        "position_embedding_type": "absolute", "model_type": "bert"
    })
    .to_string()
}

/// Every tensor of a 2-layer BERT, values from a fixed-seed generator (norm weights near 1).
fn tensors() -> Vec<(String, Vec<usize>)> {
    let mut t = vec![
        ("embeddings.word_embeddings.weight".to_owned(), vec![VOCAB, HIDDEN]),
        ("embeddings.position_embeddings.weight".to_owned(), vec![POSITIONS, HIDDEN]),
        ("embeddings.token_type_embeddings.weight".to_owned(), vec![2, HIDDEN]),
        ("embeddings.LayerNorm.weight".to_owned(), vec![HIDDEN]),
        ("embeddings.LayerNorm.bias".to_owned(), vec![HIDDEN]),
    ];
    for l in 0..2 {
        let p = format!("encoder.layer.{l}");
        for (name, shape) in [
            ("attention.self.query.weight", vec![HIDDEN, HIDDEN]),
            ("attention.self.query.bias", vec![HIDDEN]),
            ("attention.self.key.weight", vec![HIDDEN, HIDDEN]),
            ("attention.self.key.bias", vec![HIDDEN]),
            ("attention.self.value.weight", vec![HIDDEN, HIDDEN]),
            ("attention.self.value.bias", vec![HIDDEN]),
            ("attention.output.dense.weight", vec![HIDDEN, HIDDEN]),
            ("attention.output.dense.bias", vec![HIDDEN]),
            ("attention.output.LayerNorm.weight", vec![HIDDEN]),
            ("attention.output.LayerNorm.bias", vec![HIDDEN]),
            ("intermediate.dense.weight", vec![INTER, HIDDEN]),
            ("intermediate.dense.bias", vec![INTER]),
            ("output.dense.weight", vec![HIDDEN, INTER]),
            ("output.dense.bias", vec![HIDDEN]),
            ("output.LayerNorm.weight", vec![HIDDEN]),
            ("output.LayerNorm.bias", vec![HIDDEN]),
        ] {
            t.push((format!("{p}.{name}"), shape));
        }
    }
    t
}

/// Writes the tiny model (with `tweak` applied to the tensor list) and returns the weights' bytes.
fn write_model(dir: &Path, tweak: impl Fn(&mut Vec<(String, Vec<usize>)>)) -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    };
    let mut list = tensors();
    tweak(&mut list);
    let map: HashMap<String, Tensor> = list
        .into_iter()
        .map(|(name, shape)| {
            let n: usize = shape.iter().product();
            let scale =
                if name.contains("embeddings") && !name.contains("LayerNorm") { 2.0 } else { 1.2 };
            let values: Vec<f32> = (0..n)
                .map(|_| {
                    if name.ends_with("LayerNorm.weight") {
                        1.0 + 0.3 * next()
                    } else {
                        scale * next()
                    }
                })
                .collect();
            (name, Tensor::from_vec(values, shape, &Device::Cpu).unwrap())
        })
        .collect();
    let path = dir.join("model.safetensors");
    candle_core::safetensors::save(&map, &path).unwrap();
    std::fs::write(dir.join("config.json"), config_json()).unwrap();
    std::fs::read(path).unwrap()
}

fn candle_model(weights: Vec<u8>) -> BertModel {
    let config: Config = serde_json::from_str(&config_json()).unwrap();
    let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).unwrap();
    BertModel::load(vb, &config).unwrap()
}

/// candle's hidden states of one sequence run alone (no padding, no mask).
fn candle_hidden(model: &BertModel, ids: &[u32], types: &[u32]) -> Vec<f32> {
    let t = |v: &[u32]| Tensor::from_slice(v, (1, v.len()), &Device::Cpu).unwrap();
    let out = model.forward(&t(ids), &t(types), None).unwrap();
    out.flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

fn sequences() -> Vec<(Vec<u32>, Vec<u32>)> {
    [1usize, 3, 7, 16, 2, 12]
        .iter()
        .enumerate()
        .map(|(s, &len)| {
            let ids = (0..len).map(|i| ((i * 7 + s * 3) % VOCAB) as u32).collect();
            let types = (0..len).map(|i| u32::from(s % 2 == 1 && i >= len / 2)).collect();
            (ids, types)
        })
        .collect()
}

#[test]
fn a_tiny_random_bert_matches_candles_bert_model() {
    let dir = tempfile::tempdir().unwrap();
    let weights = write_model(dir.path(), |_| {});
    let ours = Bert::load(dir.path(), config_json().as_bytes(), &weights).unwrap();
    let reference = candle_model(weights);
    let seqs = sequences();
    let packed: Vec<Seq<'_>> =
        seqs.iter().map(|(ids, types)| Seq { ids, type_ids: types }).collect();
    let mut scratch = Scratch::default();
    let got = ours.forward(&packed, &mut scratch).unwrap().to_vec();
    let want: Vec<f32> =
        seqs.iter().flat_map(|(ids, types)| candle_hidden(&reference, ids, types)).collect();
    assert_eq!(got.len(), want.len());
    let diff = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(diff < 2e-5, "max abs diff {diff}");
    // The values are not trivially equal (e.g. all zeros): layer norm spreads them out.
    assert!(want.iter().map(|v| v.abs()).sum::<f32>() / want.len() as f32 > 0.3);
}

#[test]
fn a_sequence_gives_the_same_states_alone_and_packed_with_others() {
    let dir = tempfile::tempdir().unwrap();
    let weights = write_model(dir.path(), |_| {});
    let bert = Bert::load(dir.path(), config_json().as_bytes(), &weights).unwrap();
    let seqs = sequences();
    let all: Vec<Seq<'_>> = seqs.iter().map(|(ids, types)| Seq { ids, type_ids: types }).collect();
    let mut scratch = Scratch::default();
    let packed = bert.forward(&all, &mut scratch).unwrap().to_vec();
    let mut alone = Vec::new();
    for seq in &all {
        alone.extend_from_slice(bert.forward(std::slice::from_ref(seq), &mut scratch).unwrap());
    }
    let diff = packed.iter().zip(&alone).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(diff <= 1e-6, "max abs diff {diff}");
}

fn load_error(tweak: impl Fn(&mut Vec<(String, Vec<usize>)>)) -> String {
    let dir = tempfile::tempdir().unwrap();
    let weights = write_model(dir.path(), tweak);
    match Bert::load(dir.path(), config_json().as_bytes(), &weights) {
        Err(LocalError::BadModel { message, .. }) => message,
        Err(other) => panic!("expected BadModel, got {other}"),
        Ok(_) => panic!("a broken model loaded"),
    }
}

#[test]
fn a_tensor_of_the_wrong_shape_is_a_bad_model_error() {
    let message = load_error(|list| {
        let query = list.iter_mut().find(|(n, _)| n.ends_with("1.attention.self.query.weight"));
        query.unwrap().1 = vec![HIDDEN, HIDDEN - 1];
    });
    assert!(message.contains("encoder.layer.1.attention.self.query.weight"), "{message}");
    assert!(message.contains("[8, 7]"), "{message}");
}

#[test]
fn a_missing_tensor_or_unsupported_config_is_a_bad_model_error() {
    let message = load_error(|list| list.retain(|(n, _)| !n.contains("intermediate.dense.bias")));
    assert!(message.contains("intermediate.dense.bias"), "{message}");
    let dir = tempfile::tempdir().unwrap();
    let weights = write_model(dir.path(), |_| {});
    let config = config_json().replace("\"gelu\"", "\"relu\"");
    let Err(LocalError::BadModel { message, .. }) =
        Bert::load(dir.path(), config.as_bytes(), &weights)
    else {
        panic!("relu accepted");
    };
    assert!(message.contains("relu"), "{message}");
    assert!(matches!(
        Bert::load(dir.path(), config_json().as_bytes(), b"not safetensors"),
        Err(LocalError::BadModel { .. })
    ));
}

#[test]
fn ids_outside_the_vocabulary_or_positions_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let weights = write_model(dir.path(), |_| {});
    let bert = Bert::load(dir.path(), config_json().as_bytes(), &weights).unwrap();
    let mut scratch = Scratch::default();
    let ids = [1, VOCAB as u32];
    let seq = Seq { ids: &ids, type_ids: &[0, 0] };
    assert!(bert.forward(&[seq], &mut scratch).is_err());
    let long = vec![1u32; POSITIONS + 1];
    let seq = Seq { ids: &long, type_ids: &long };
    assert!(bert.forward(&[seq], &mut scratch).is_err());
    assert!(bert.forward(&[], &mut scratch).unwrap().is_empty());
}

#[test]
fn erf_approximation_is_within_1e7_of_libm() {
    let (mut worst, mut at) = (0.0f64, 0.0f32);
    for i in -700_000..=700_000 {
        let x = i as f32 * 1e-5;
        let err = (f64::from(erf_approx(x)) - libm::erf(f64::from(x))).abs();
        if err > worst {
            (worst, at) = (err, x);
        }
    }
    assert!(worst < 1e-7, "max abs error {worst} at {at}");
    for (x, want) in [
        (0.5f32, 0.520_499_877_813_046_5),
        (1.0, 0.842_700_792_949_714_9),
        (-2.0, -0.995_322_265_018_952_7),
    ] {
        assert!((f64::from(erf_approx(x)) - want).abs() < 1e-7, "erf({x})");
    }
    assert_eq!(erf_approx(0.0), 0.0);
    assert_eq!(erf_approx(9.0), 1.0);
}

#[test]
fn exp_approximation_is_within_3e7_relative_of_libm_in_the_softmax_range() {
    let mut worst = 0.0f64;
    for i in 0..=8_700_000 {
        let x = -(i as f32) * 1e-5;
        let want = libm::exp(f64::from(x));
        let err = (f64::from(exp_approx(x)) - want).abs() / want;
        worst = worst.max(err);
    }
    assert!(worst < 3e-7, "max relative error {worst}");
    assert_eq!(exp_approx(0.0), 1.0);
    assert!(exp_approx(-200.0) < 1e-37);
}

#[test]
fn gelu_matches_the_exact_definition() {
    for i in -800..=800 {
        let x = i as f32 * 0.01;
        let want = 0.5 * f64::from(x) * (1.0 + libm::erf(f64::from(x) / std::f64::consts::SQRT_2));
        assert!((f64::from(gelu(x)) - want).abs() < 1e-6, "gelu({x})");
    }
}
