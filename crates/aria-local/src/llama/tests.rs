//! The small pieces of the forward pass. The whole pass is checked against the real model in
//! the integration tests (greedy answers, cache reuse).

use super::*;

#[test]
fn rms_norm_scales_each_row_to_unit_rms_times_the_weight() {
    let x = [3.0, 4.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0];
    let w = [1.0, 2.0, 1.0, 1.0];
    let mut out = Vec::new();
    rms_norm_rows(&x, &w, 0.0, &mut out);
    let rms = (25.0f32 / 4.0).sqrt();
    assert_eq!(out[..4], [3.0 / rms, 8.0 / rms, 0.0, 0.0]);
    assert_eq!(out[4..], [1.0, 2.0, 1.0, 1.0]);
}

#[test]
fn silu_and_dot_match_their_definitions() {
    assert_eq!(silu(0.0), 0.0);
    assert!((silu(2.0) - 2.0 / (1.0 + (-2.0f32).exp())).abs() < 1e-7);
    let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..19).map(|i| 1.0 - i as f32 * 0.5).collect();
    let want: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    assert!((dot(&a, &b) - want).abs() < 1e-3);
}

/// A tiny `qwen2` model in a GGUF written here, f32 weights (candle's `QMatMul` path).
mod synthetic {
    use std::io::Cursor;

    use candle_core::quantized::gguf_file::{self, Value};
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};

    use super::*;

    const E: usize = 32;
    const HEADS: usize = 2;
    const KV_HEADS: usize = 1;
    const D: usize = E / HEADS;
    const KV: usize = KV_HEADS * D;
    const FF: usize = 48;
    const VOCAB: usize = 8;

    /// Deterministic small values, different per tensor.
    fn values(seed: usize, n: usize) -> Vec<f32> {
        (0..n).map(|i| (((i * 31 + seed * 17) % 97) as f32 - 48.0) / 200.0).collect()
    }

    struct Spec {
        tied: bool,
        biases: bool,
    }

    fn tensors(spec: &Spec) -> Vec<(String, Vec<usize>, Vec<f32>)> {
        let mut t = vec![
            ("token_embd.weight".to_owned(), vec![VOCAB, E], values(1, VOCAB * E)),
            ("output_norm.weight".to_owned(), vec![E], vec![1.0; E]),
        ];
        if !spec.tied {
            t.push(("output.weight".to_owned(), vec![VOCAB, E], values(1, VOCAB * E)));
        }
        let b = |s: &str| format!("blk.0.{s}");
        for (i, (name, rows, cols)) in [
            ("attn_q.weight", E, E),
            ("attn_k.weight", KV, E),
            ("attn_v.weight", KV, E),
            ("attn_output.weight", E, E),
            ("ffn_gate.weight", FF, E),
            ("ffn_up.weight", FF, E),
            ("ffn_down.weight", E, FF),
        ]
        .into_iter()
        .enumerate()
        {
            t.push((b(name), vec![rows, cols], values(i + 2, rows * cols)));
        }
        t.push((b("attn_norm.weight"), vec![E], vec![1.0; E]));
        t.push((b("ffn_norm.weight"), vec![E], values(20, E).iter().map(|v| 1.0 + v).collect()));
        if spec.biases {
            t.push((b("attn_q.bias"), vec![E], values(30, E)));
            t.push((b("attn_k.bias"), vec![KV], values(31, KV)));
            t.push((b("attn_v.bias"), vec![KV], values(32, KV).iter().map(|v| v * 20.0).collect()));
        }
        t
    }

    fn load(spec: &Spec) -> Result<Llama, String> {
        let md: Vec<(&str, Value)> = vec![
            ("general.architecture", Value::String("qwen2".into())),
            ("qwen2.block_count", Value::U32(1)),
            ("qwen2.context_length", Value::U32(64)),
            ("qwen2.embedding_length", Value::U32(E as u32)),
            ("qwen2.attention.head_count", Value::U32(HEADS as u32)),
            ("qwen2.attention.head_count_kv", Value::U32(KV_HEADS as u32)),
            ("qwen2.rope.freq_base", Value::F32(10_000.0)),
            ("qwen2.attention.layer_norm_rms_epsilon", Value::F32(1e-6)),
        ];
        let qtensors: Vec<(String, QTensor)> = tensors(spec)
            .into_iter()
            .map(|(name, shape, data)| {
                let t = Tensor::from_vec(data, shape, &Device::Cpu).unwrap();
                (name, QTensor::quantize(&t, GgmlDType::F32).unwrap())
            })
            .collect();
        let md_refs: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (*k, v)).collect();
        let t_refs: Vec<(&str, &QTensor)> = qtensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let mut file = Cursor::new(Vec::new());
        gguf_file::write(&mut file, &md_refs, &t_refs).unwrap();
        file.set_position(0);
        let content = gguf_file::Content::read(&mut file).unwrap();
        Llama::load(&content, &mut file)
    }

    fn matvec(w: &[f32], x: &[f32]) -> Vec<f32> {
        w.chunks_exact(x.len()).map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum()).collect()
    }

    fn rms(x: &[f32], w: &[f32]) -> Vec<f32> {
        let mut out = Vec::new();
        rms_norm_rows(x, w, 1e-6, &mut out);
        out
    }

    /// The whole model for one token at position 0, written out: there the rotation is the
    /// identity and each head attends only to itself, so attention returns the value (bias
    /// included) of the head's key/value group.
    fn reference(spec: &Spec, token: usize) -> Vec<f32> {
        let t: std::collections::HashMap<String, Vec<f32>> =
            tensors(spec).into_iter().map(|(n, _, d)| (n, d)).collect();
        let g = |n: &str| &t[&format!("blk.0.{n}")];
        let mut x = t["token_embd.weight"][token * E..(token + 1) * E].to_vec();
        let xn = rms(&x, g("attn_norm.weight"));
        let mut v = matvec(g("attn_v.weight"), &xn);
        if spec.biases {
            add_into(&mut v, g("attn_v.bias"));
        }
        let att: Vec<f32> =
            (0..HEADS).flat_map(|h| v[(h / (HEADS / KV_HEADS)) * D..][..D].to_vec()).collect();
        add_into(&mut x, &matvec(g("attn_output.weight"), &att));
        let xn = rms(&x, g("ffn_norm.weight"));
        let gate = matvec(g("ffn_gate.weight"), &xn);
        let up = matvec(g("ffn_up.weight"), &xn);
        let h: Vec<f32> = gate.iter().zip(&up).map(|(a, b)| silu(*a) * b).collect();
        add_into(&mut x, &matvec(g("ffn_down.weight"), &h));
        let out = if spec.tied { &t["token_embd.weight"] } else { &t["output.weight"] };
        matvec(out, &rms(&x, &[1.0; E]))
    }

    fn assert_close(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-4, "{a:?}\nvs\n{b:?}");
        }
    }

    #[test]
    fn one_token_matches_the_written_out_model_with_the_value_bias_applied() {
        let spec = Spec { tied: false, biases: true };
        let model = load(&spec).unwrap();
        let logits = model.forward(&[3], &mut model.new_cache()).unwrap();
        assert_close(&logits, &reference(&spec, 3));
        // The value bias is large here: leaving it out would move the logits.
        let unbiased = reference(&Spec { biases: false, ..spec }, 3);
        assert!(logits.iter().zip(&unbiased).any(|(a, b)| (a - b).abs() > 1e-2));
    }

    #[test]
    fn without_output_weight_the_token_embedding_is_the_output_layer() {
        let tied = load(&Spec { tied: true, biases: true }).unwrap();
        let untied = load(&Spec { tied: false, biases: true }).unwrap();
        for tokens in [&[5u32][..], &[1, 7, 2]] {
            let a = tied.forward(tokens, &mut tied.new_cache()).unwrap();
            let b = untied.forward(tokens, &mut untied.new_cache()).unwrap();
            assert_eq!(a, b, "the synthetic output.weight is a copy of the embedding");
        }
        assert_close(
            &tied.forward(&[6], &mut tied.new_cache()).unwrap(),
            &reference(&Spec { tied: true, biases: true }, 6),
        );
    }

    #[test]
    fn a_prompt_in_one_pass_equals_the_same_tokens_one_at_a_time() {
        let biased = load(&Spec { tied: false, biases: true }).unwrap();
        // Prompt in one pass and token by token: the cache and positions line up.
        let whole = biased.forward(&[1, 4, 2, 6], &mut biased.new_cache()).unwrap();
        let mut cache = biased.new_cache();
        let mut stepped = Vec::new();
        for t in [1, 4, 2, 6] {
            stepped = biased.forward(&[t], &mut cache).unwrap();
        }
        assert_close(&whole, &stepped);
        assert_eq!(cache.len(), 4);
    }

    #[test]
    fn a_cache_cut_back_to_a_shared_prefix_continues_as_if_it_never_held_more() {
        let model = load(&Spec { tied: false, biases: true }).unwrap();
        let fresh = model.forward(&[1, 4, 3, 5], &mut model.new_cache()).unwrap();
        let mut cache = model.new_cache();
        model.forward(&[1, 4, 2, 6, 7], &mut cache).unwrap();
        cache.truncate(2);
        assert_eq!(cache.len(), 2);
        let continued = model.forward(&[3, 5], &mut cache).unwrap();
        assert_close(&fresh, &continued);
        assert_eq!(cache.len(), 4);
        cache.truncate(9);
        assert_eq!(cache.len(), 4, "truncating never lengthens");
    }

    #[test]
    fn a_qwen2_file_without_its_biases_is_refused() {
        let err = load(&Spec { tied: true, biases: false }).unwrap_err();
        assert!(err.contains("`blk.0.attn_q.bias` is missing"), "{err}");
    }
}
