//! The sentence embedder with the real all-MiniLM-L6-v2 weights (granite's own tests are in
//! `granite.rs`).

use aria_local::cosine;

use super::support::minilm as embedder;

fn embed(texts: &[&str]) -> Vec<Vec<f32>> {
    embedder().embed(&texts.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
}

#[test]
fn vectors_have_384_dimensions_and_unit_norm() {
    let vs = embed(&[
        "hello",
        "",
        "A much longer sentence about databases, indexes and query planners.",
    ]);
    assert_eq!(vs.len(), 3);
    for v in &vs {
        assert_eq!(v.len(), 384);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
}

#[test]
fn related_sentences_score_higher_than_unrelated_ones() {
    let triples = [
        (
            "The cat sits on the mat.",
            "A kitten is resting on a rug.",
            "Stock markets fell sharply today.",
        ),
        (
            "How do I reset my password?",
            "I forgot my login credentials.",
            "The recipe needs two eggs.",
        ),
        (
            "Rust is a systems programming language.",
            "C++ and Rust are used for low-level software.",
            "We hiked up the mountain at dawn.",
        ),
        (
            "It is raining heavily in London.",
            "London weather: storms and downpours.",
            "My favourite colour is green.",
        ),
    ];
    super::support::assert_related_above_unrelated(embedder(), &triples);
}

#[test]
fn batching_and_order_do_not_change_the_vectors() {
    let texts: Vec<String> =
        (0..70).map(|i| format!("sentence {i} {}", "word ".repeat(i % 9))).collect();
    let all = embedder().embed(&texts).unwrap();
    for i in [0usize, 33, 69] {
        let one = embedder().embed(&texts[i..=i]).unwrap();
        let diff: f32 = one[0].iter().zip(&all[i]).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(diff < 1e-4, "text {i} differs by {diff} when batched");
    }
}

#[test]
fn every_plan_gives_the_same_vectors_in_the_callers_order() {
    // Lengths out of order, some long enough to be truncated at 256 tokens.
    let texts: Vec<String> = (0..23)
        .map(|i| format!("text {i}: {}", "pressure wing flow ".repeat((i * 37) % 120)))
        .collect();
    let reference =
        embedder().embed_with(&texts, aria_local::EmbedPlan { batch: 1, workers: 1 }).unwrap();
    for (batch, workers) in [(8, 1), (8, 2), (5, 3), (32, 2), (64, 8)] {
        let got = embedder().embed_with(&texts, aria_local::EmbedPlan { batch, workers }).unwrap();
        assert_eq!(got.len(), texts.len());
        for (i, (g, r)) in got.iter().zip(&reference).enumerate() {
            let diff: f32 = g.iter().zip(r).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            assert!(diff < 1e-4, "batch {batch}, {workers} workers: text {i} differs by {diff}");
        }
    }
    assert!(embedder().embed_with(&[], aria_local::EmbedPlan::default()).unwrap().is_empty());
}

/// Reference values from an independent forward pass: a 40-line NumPy BERT reading the same
/// safetensors with the Python `tokenizers` package (mean pooling, L2 norm), hard-coded here.
#[test]
fn embeddings_match_an_independent_numpy_reference() {
    let v =
        embed(&["This is a test.", "The cat sits on the mat.", "A kitten is resting on a rug."]);
    let expected_first = [
        [0.03359f32, 0.01051, -0.0175, 0.02935, -0.00942, -0.03702],
        [0.13418, -0.0329, -0.0248, 0.04144, -0.03635, 0.04181],
    ];
    for (got, want) in v.iter().zip(expected_first) {
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 2e-4, "{:?} vs {want:?}", &got[..6]);
        }
    }
    assert!((cosine(&v[1], &v[2]) - 0.64113).abs() < 1e-3, "{}", cosine(&v[1], &v[2]));
}

/// Through the `aria_api::Embedder` trait: the id names the catalog model, the work happens off
/// the calling thread, and the vectors are the ones the blocking call gives.
#[test]
fn the_async_handle_matches_the_blocking_embedder() {
    use aria_api::Embedder;
    let dir = super::support::models_dir().join(aria_local::MINILM_EMBEDDING_MODEL);
    let handle = aria_local::LocalEmbedderHandle::new(
        std::sync::Arc::new(aria_local::LocalEmbedder::load(&dir).unwrap()),
        aria_local::MINILM_EMBEDDING_MODEL,
    );
    assert_eq!(handle.model_id(), "local:all-minilm-l6-v2");
    assert_eq!(handle.dims(), 384);
    let texts = vec!["The cat sits on the mat.".to_owned(), "Stock prices fell.".to_owned()];
    let caller = std::thread::current().id();
    let got = futures::executor::block_on(handle.embed(&texts)).unwrap();
    assert_eq!(std::thread::current().id(), caller);
    let want = embed(&["The cat sits on the mat.", "Stock prices fell."]);
    for (g, w) in got.iter().zip(&want) {
        let diff = g.iter().zip(w).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(diff < 1e-5, "{diff}");
    }
    assert!(futures::executor::block_on(handle.embed(&[])).unwrap().is_empty());
}

/// candle's `BertModel` on the same files, one text per forward pass (no padding), mean-pooled
/// and L2-normalised: the reference our own forward pass replaced.
fn candle_reference(texts: &[String]) -> Vec<Vec<f32>> {
    use candle_core::{DType, Device, Tensor};
    use candle_transformers::models::bert::{BertModel, Config};
    let dir = super::support::models_dir().join(aria_local::MINILM_EMBEDDING_MODEL);
    let config: Config =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
    let vb = candle_nn::VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
        .unwrap();
    let model = BertModel::load(vb, &config).unwrap();
    let mut tokenizer = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(tokenizers::TruncationParams {
            max_length: 256, // embed.rs MAX_TOKENS
            ..Default::default()
        }))
        .unwrap();
    texts
        .iter()
        .map(|text| {
            let e = tokenizer.encode(text.as_str(), true).unwrap();
            let t = |v: &[u32]| Tensor::from_slice(v, (1, v.len()), &Device::Cpu).unwrap();
            let hidden = model.forward(&t(e.get_ids()), &t(e.get_type_ids()), None).unwrap();
            let mean = hidden.mean(1).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
            let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
            mean.iter().map(|v| v / norm).collect()
        })
        .collect()
}

fn varied_texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        "",
        "a",
        "Hello!",
        "The cat sits on the mat.",
        "How do I reset my password?",
        "Rust is a systems programming language focused on safety and speed.",
        "Ünïcödé tëxt: naïve café, Straße, smörgåsbord — and “quotes”.",
        "日本語のテキストと中文文本混合在一起。",
        "Emoji 🚀🔥 and symbols ∑∫√ ≠ ≤ ≥ ∞",
        "   leading and trailing whitespace   ",
        "UPPER CASE SHOUTING ABOUT THE DATABASE INDEX",
        "code: fn main() { println!(\"{}\", 1 + 2); }",
        "https://example.com/path?query=1&other=two#fragment",
        "1234567890 3.14159 2e10 -42",
        "Meeting with the customer on Tuesday about the invoice and the project schedule.",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Long texts, well past 256 tokens (truncated), and one just around the limit.
    texts.push("pressure wing flow boundary layer ".repeat(80));
    texts.push("The quick brown fox jumps over the lazy dog. ".repeat(40));
    texts.push((0..300).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" "));
    texts.push("memory agent file commit branch ".repeat(50));
    texts.push("word ".repeat(254));
    texts
}

/// Our BERT forward pass against candle's on the real model, varied texts, default plan.
#[test]
fn embeddings_match_candles_bert_model() {
    let texts = varied_texts();
    let got = embedder().embed(&texts).unwrap();
    let want = candle_reference(&texts);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.len(), w.len());
        let diff = g.iter().zip(w).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        let cos = cosine(g, w);
        assert!(cos >= 0.99999 && diff <= 1e-4, "text {i}: cosine {cos}, max abs diff {diff}");
    }
}

/// Packing a batch's tokens leaves every text's vector as it is alone (to float rounding).
#[test]
fn embedding_one_at_a_time_equals_embedding_in_batches() {
    let texts = varied_texts();
    let alone: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| embedder().embed(std::slice::from_ref(t)).unwrap().remove(0))
        .collect();
    for (batch, workers) in [(8, 2), (32, 1), (5, 3)] {
        let got = embedder().embed_with(&texts, aria_local::EmbedPlan { batch, workers }).unwrap();
        for (i, (g, a)) in got.iter().zip(&alone).enumerate() {
            let diff = g.iter().zip(a).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
            assert!(diff <= 1e-6, "batch {batch}, {workers} workers: text {i} differs by {diff}");
        }
    }
}

#[test]
fn a_long_text_is_cut_into_passages_that_fit_and_cover_it() {
    super::support::assert_passages_cover_long_texts(embedder());
}

#[test]
fn the_async_handle_embeds_each_passage_of_a_long_text() {
    use aria_api::Embedder;
    let handle = aria_local::LocalEmbedderHandle::new(
        std::sync::Arc::new(
            aria_local::LocalEmbedder::load(
                &super::support::models_dir().join(aria_local::MINILM_EMBEDDING_MODEL),
            )
            .unwrap(),
        ),
        "all-minilm-l6-v2",
    );
    let long = super::support::long_text_with_a_late_topic();
    let texts = vec!["short".to_owned(), long.clone()];
    let grouped = futures::executor::block_on(handle.embed_passages(&texts)).unwrap();
    let cut = embedder().passages(&long).unwrap();
    assert_eq!(grouped.iter().map(Vec::len).collect::<Vec<_>>(), [1, cut.len()]);
    assert_eq!(grouped[0][0], embed(&["short"])[0], "a short text's vector is unchanged");
    let pieces: Vec<String> = cut.iter().map(|r| long[r.clone()].to_owned()).collect();
    assert_eq!(grouped[1], embedder().embed(&pieces).unwrap());
}
