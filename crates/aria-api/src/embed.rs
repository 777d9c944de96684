//! The embedder contract: texts in, one vector per text out.
//!
//! An embedder is identified by [`Embedder::model_id`], a stable string such as
//! `local:all-MiniLM-L6-v2`, `ollama:nomic-embed-text` or `openai:text-embedding-3-small`. The
//! memory store records that id beside every vector and never compares vectors from two ids:
//! changing the embedder means re-embedding (`aria memories reindex`), never mixing.

use std::ops::Range;

use futures::future::BoxFuture;

/// A sentence embedder. Only [`Embedder::embed`] does work; it is batched, and the returned
/// vector has exactly one entry per input text, in input order, each of length [`Embedder::dims`].
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// A stable identifier of the model and its provider, e.g. `local:all-MiniLM-L6-v2`.
    fn model_id(&self) -> &str;

    /// The length of every vector this embedder returns.
    fn dims(&self) -> usize;

    /// Embeds a batch of texts. An empty batch yields an empty result without any work.
    fn embed(&self, texts: &[String]) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>>;

    /// Whether the texts stay on this machine (an embedded model, or a server whose every
    /// address was checked to be loopback). Private memories are embedded only by such an
    /// embedder ([`may_embed`]). The default is `false`: an embedder that does not say is
    /// treated as remote.
    fn on_this_machine(&self) -> bool {
        false
    }

    /// Where a long text is cut into passages, each embedded on its own (a model reads only so
    /// many tokens; the rest of a longer text would be ignored): byte ranges of `text`, in
    /// order, overlapping a little, together covering it. A text that fits is one passage,
    /// `0..text.len()`, so its vector is the one [`Embedder::embed`] gives for it.
    ///
    /// The default cuts by words ([`word_passages`], [`PASSAGE_WORDS`] words with
    /// [`PASSAGE_OVERLAP`] shared between neighbours); an embedder that knows its tokenizer
    /// cuts by tokens instead.
    fn passages(&self, text: &str) -> Vec<Range<usize>> {
        word_passages(text, PASSAGE_WORDS, PASSAGE_OVERLAP)
    }

    /// One vector per passage of each text ([`Embedder::passages`]), grouped by text, in
    /// order: what a memory stores so that search can score it by its best passage.
    fn embed_passages(
        &self,
        texts: &[String],
    ) -> BoxFuture<'static, Result<Vec<Vec<Vec<f32>>>, EmbedError>> {
        let plan = PassagePlan::new(texts, |text| self.passages(text));
        let vectors = self.embed(plan.texts());
        Box::pin(async move { plan.regroup(vectors.await?) })
    }
}

/// Whether a memory (private or not) may be sent to `embedder`: a private memory never leaves
/// this machine, so a remote embedder does not get it (it is found by its words, BM25, only).
pub fn may_embed(embedder: &dyn Embedder, private: bool) -> bool {
    !private || embedder.on_this_machine()
}

/// Words per passage when an embedder cuts by words: about 210 tokens of English prose, which
/// fits the 256 tokens of the small embedders with room for longer words.
pub const PASSAGE_WORDS: usize = 160;
/// Words two neighbouring passages share, so a sentence cut at a border is whole in one.
pub const PASSAGE_OVERLAP: usize = 40;
/// Passages of one text at most, from its start: about 10,000 words. What lies past them is
/// found by its words (BM25) only. Without a bound one pasted book would cost minutes of
/// embedding and thousands of vectors in every search's index.
pub const MAX_PASSAGES: usize = 64;

/// Cuts `text` into [`even_windows`] of at most `words` whitespace-separated words, `overlap`
/// shared between neighbours, the first [`MAX_PASSAGES`] of them; one range, `0..text.len()`,
/// when the text has no more than `words` words.
#[expect(clippy::single_range_in_vec_init, reason = "one passage: the whole text")]
pub fn word_passages(text: &str, words: usize, overlap: usize) -> Vec<Range<usize>> {
    let words = words.max(1);
    let spans: Vec<Range<usize>> = word_spans(text).collect();
    if spans.len() <= words {
        return vec![0..text.len()];
    }
    even_windows(spans.len(), words, overlap)
        .into_iter()
        .take(MAX_PASSAGES)
        .map(|(first, last)| spans[first].start..spans[last].end)
        .collect()
}

/// As few windows of equal length, at most `width` items, as cover `n` items with at least
/// `overlap` items shared between neighbours (fewer when `overlap` is not less than `width`),
/// as (first, last) indices, inclusive, in order. Equal lengths keep passages' scores
/// comparable (a short tail passage would be judged against whole ones), and no window is
/// longer than the cover needs. One window for `n <= width`, none for `n == 0`.
pub fn even_windows(n: usize, width: usize, overlap: usize) -> Vec<(usize, usize)> {
    let width = width.max(1);
    if n <= width {
        return if n == 0 { Vec::new() } else { vec![(0, n - 1)] };
    }
    let overlap = overlap.min(width - 1);
    let count = (n - overlap).div_ceil(width - overlap);
    // At most `width` (count · (width − overlap) ≥ n − overlap), and more than `overlap`.
    let size = (n + (count - 1) * overlap).div_ceil(count);
    let step = size - overlap;
    (0..count)
        .map(|i| {
            let first = if i + 1 == count { n - size } else { i * step };
            (first, first + size - 1)
        })
        .collect()
}

/// The byte ranges of the whitespace-separated words of `text`.
fn word_spans(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut start = None;
    text.char_indices().map(Some).chain(std::iter::once(None)).filter_map(move |c| match c {
        Some((i, ch)) if ch.is_whitespace() => start.take().map(|s| s..i),
        Some((i, _)) => {
            start.get_or_insert(i);
            None
        }
        None => start.take().map(|s| s..text.len()),
    })
}

/// The passages of `text` its cutter's `ranges` give, as a memory stores them: a range that is
/// empty, out of the text or not on character boundaries is dropped, those past the first
/// [`MAX_PASSAGES`] too, and a text left without one is one passage, the whole text.
pub fn passage_texts(text: &str, ranges: Vec<Range<usize>>) -> Vec<&str> {
    let mut pieces: Vec<&str> = ranges
        .into_iter()
        .filter(|r| !r.is_empty())
        .filter_map(|r| text.get(r))
        .take(MAX_PASSAGES)
        .collect();
    if pieces.is_empty() {
        pieces.push(text);
    }
    pieces
}

/// The passages of a batch of texts, flattened for one [`Embedder::embed`] call and grouped
/// back by text afterwards.
#[derive(Debug, Clone, PartialEq)]
pub struct PassagePlan {
    texts: Vec<String>,
    /// How many passages each input text has.
    counts: Vec<usize>,
}

impl PassagePlan {
    /// `cut` gives a text's passages as byte ranges, kept as [`passage_texts`] keeps them.
    pub fn new(texts: &[String], cut: impl Fn(&str) -> Vec<Range<usize>>) -> PassagePlan {
        let mut flat = Vec::with_capacity(texts.len());
        let mut counts = Vec::with_capacity(texts.len());
        for text in texts {
            let pieces = passage_texts(text, cut(text));
            counts.push(pieces.len());
            flat.extend(pieces.into_iter().map(str::to_owned));
        }
        PassagePlan { texts: flat, counts }
    }

    /// Every passage of every text, in order.
    pub fn texts(&self) -> &[String] {
        &self.texts
    }

    /// How many passages each text has.
    pub fn counts(&self) -> &[usize] {
        &self.counts
    }

    /// Groups one vector per passage (in [`PassagePlan::texts`]' order) back by text.
    pub fn regroup(&self, vectors: Vec<Vec<f32>>) -> Result<Vec<Vec<Vec<f32>>>, EmbedError> {
        if vectors.len() != self.texts.len() {
            return Err(EmbedError::Malformed {
                message: format!(
                    "asked for {} passage vectors, got {}",
                    self.texts.len(),
                    vectors.len()
                ),
            });
        }
        let mut vectors = vectors.into_iter();
        Ok(self.counts.iter().map(|&n| vectors.by_ref().take(n).collect()).collect())
    }
}

/// A classified embedding failure. Every message says what to do next.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmbedError {
    #[error(
        "the embedding provider rejected the credentials ({message}); check the API key variable for this provider"
    )]
    Auth { message: String },
    #[error(
        "could not reach the embedding provider at {endpoint}: {message}; check that the server is running and the base URL is right"
    )]
    Network { endpoint: String, message: String },
    #[error("the embedding provider answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("the embedding provider sent an answer ARIA could not use: {message}")]
    Malformed { message: String },
    #[error("the embedding model failed: {message}")]
    Model { message: String },
    #[error("the embedder is not configured correctly: {message}")]
    Config { message: String },
}

impl EmbedError {
    /// Whether trying the same batch again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            EmbedError::Network { .. } => true,
            EmbedError::Http { status, .. } => *status >= 500 || *status == 408 || *status == 429,
            EmbedError::Auth { .. }
            | EmbedError::Malformed { .. }
            | EmbedError::Model { .. }
            | EmbedError::Config { .. } => false,
        }
    }

    /// A stable machine name for traces and JSON output.
    pub fn kind(&self) -> &'static str {
        match self {
            EmbedError::Auth { .. } => "auth",
            EmbedError::Network { .. } => "network",
            EmbedError::Http { .. } => "http",
            EmbedError::Malformed { .. } => "malformed",
            EmbedError::Model { .. } => "model",
            EmbedError::Config { .. } => "config",
        }
    }
}

/// Checks that a batch answer has one vector per text, each of the promised length. Embedders
/// call this before returning, so a short or ragged answer is an error rather than a silent
/// misalignment between texts and vectors.
pub fn check_batch(texts: usize, dims: usize, vectors: &[Vec<f32>]) -> Result<(), EmbedError> {
    if vectors.len() != texts {
        return Err(EmbedError::Malformed {
            message: format!("asked for {texts} vectors, got {}", vectors.len()),
        });
    }
    if let Some((i, v)) = vectors.iter().enumerate().find(|(_, v)| v.len() != dims) {
        return Err(EmbedError::Malformed {
            message: format!("vector {i} has {} dimensions, expected {dims}", v.len()),
        });
    }
    if vectors.iter().flatten().any(|x| !x.is_finite()) {
        return Err(EmbedError::Malformed { message: "a vector holds NaN or infinity".into() });
    }
    Ok(())
}

/// Cosine similarity of two vectors of the same length (their dot product when both are unit
/// length); 0 when either is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na * nb) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_batch_rejects_short_ragged_and_non_finite_answers() {
        assert!(check_batch(2, 3, &[vec![0.0; 3], vec![1.0; 3]]).is_ok());
        let short = check_batch(2, 3, &[vec![0.0; 3]]).unwrap_err();
        assert!(short.to_string().contains("asked for 2 vectors, got 1"), "{short}");
        let ragged = check_batch(2, 3, &[vec![0.0; 3], vec![0.0; 2]]).unwrap_err();
        assert!(ragged.to_string().contains("vector 1 has 2 dimensions"), "{ragged}");
        assert!(check_batch(1, 1, &[vec![f32::NAN]]).is_err());
    }

    fn cut(text: &str, words: usize, overlap: usize) -> Vec<&str> {
        word_passages(text, words, overlap).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    #[expect(clippy::single_range_in_vec_init, reason = "one passage: the whole text")]
    fn a_text_that_fits_is_one_passage_exactly_as_given() {
        for text in ["", "   ", "one", "  a few words, with  spaces \n", "élan vital"] {
            assert_eq!(word_passages(text, 5, 1), [0..text.len()], "{text:?}");
        }
    }

    #[test]
    fn a_long_text_is_cut_into_overlapping_windows_that_cover_every_word() {
        let text = " w0 w1\tw2\nw3  w4 w5 w6 w7 w8 w9 ";
        assert_eq!(
            cut(text, 4, 1),
            ["w0 w1\tw2\nw3", "w3  w4 w5 w6", "w6 w7 w8 w9"],
            "the last window ends at the last word"
        );
        assert_eq!(
            cut(text, 4, 0),
            ["w0 w1\tw2\nw3", "w4 w5 w6 w7", "w6 w7 w8 w9"],
            "three equal windows, the last one ending at the last word"
        );
        // An overlap as large as the window still moves on.
        assert_eq!(cut(text, 3, 5).len(), 8);
        // Multi-byte characters stay whole.
        let greek = "αβ γδ εζ ηθ ικ";
        assert_eq!(cut(greek, 2, 0), ["αβ γδ", "εζ ηθ", "ηθ ικ"]);
    }

    #[test]
    fn every_word_of_a_long_text_is_in_some_passage() {
        let text: String = (0..1_000).map(|i| format!("word{i} ")).collect();
        let passages = cut(&text, PASSAGE_WORDS, PASSAGE_OVERLAP);
        assert_eq!(passages.len(), 1 + (1_000 - PASSAGE_WORDS).div_ceil(120));
        for i in 0..1_000 {
            let word = format!("word{i}");
            assert!(passages.iter().any(|p| p.split(' ').any(|w| w == word)), "{word}");
        }
        assert!(passages.iter().all(|p| p.split_whitespace().count() <= PASSAGE_WORDS));
    }

    #[test]
    fn even_windows_cover_everything_with_the_overlap_and_equal_lengths() {
        assert_eq!(even_windows(0, 4, 1), []);
        assert_eq!(even_windows(3, 4, 1), [(0, 2)]);
        assert_eq!(even_windows(300, 250, 62), [(0, 180), (119, 299)]);
        assert_eq!(even_windows(10, 4, 1), [(0, 3), (3, 6), (6, 9)]);
        for n in 1..400 {
            for (width, overlap) in [(1, 0), (2, 1), (5, 0), (5, 2), (16, 4), (16, 15), (64, 80)] {
                let w = even_windows(n, width, overlap);
                let sizes: Vec<usize> = w.iter().map(|(a, b)| b - a + 1).collect();
                assert!(sizes.iter().all(|&s| s == sizes[0] && s <= width), "{n} {width}: {w:?}");
                assert_eq!((w[0].0, w[w.len() - 1].1), (0, n - 1), "{n} {width}: {w:?}");
                let least = overlap.min(width - 1).min(n);
                for pair in w.windows(2) {
                    assert!(pair[0].0 < pair[1].0, "{n} {width}: {w:?}");
                    assert!(pair[0].1 + 1 >= pair[1].0 + least, "{n} {width} {overlap}: {w:?}");
                }
                // As few as the width allows.
                let step = width - overlap.min(width - 1);
                let fewest = if n <= width { 1 } else { (n - width).div_ceil(step) + 1 };
                assert_eq!(w.len(), fewest, "{n} {width} {overlap}: {w:?}");
            }
        }
    }

    #[test]
    fn a_very_long_text_gives_its_first_passages_only() {
        let text: String = (0..20_000).map(|i| format!("w{i} ")).collect();
        let passages = cut(&text, PASSAGE_WORDS, PASSAGE_OVERLAP);
        assert_eq!(passages.len(), MAX_PASSAGES);
        assert!(passages[0].starts_with("w0 w1 "));
        let plan = PassagePlan::new(std::slice::from_ref(&text), |t| {
            (0..200).map(|i| i * 10..i * 10 + 5).filter(|r| r.end <= t.len()).collect()
        });
        assert_eq!(plan.counts(), [MAX_PASSAGES], "a cutter's extra ranges are dropped too");
    }

    #[test]
    fn a_plan_flattens_passages_and_groups_their_vectors_back() {
        let texts = vec!["a b c d e".to_owned(), "short".to_owned(), "x y z".to_owned()];
        let plan = PassagePlan::new(&texts, |t| word_passages(t, 2, 0));
        assert_eq!(plan.texts(), ["a b", "c d", "d e", "short", "x y", "y z"]);
        assert_eq!(plan.counts(), [3, 1, 2]);
        let vectors: Vec<Vec<f32>> = (0..6).map(|i| vec![i as f32]).collect();
        let grouped = plan.regroup(vectors).unwrap();
        assert_eq!(
            grouped,
            [vec![vec![0.0], vec![1.0], vec![2.0]], vec![vec![3.0]], vec![vec![4.0], vec![5.0]]]
        );
        assert!(plan.regroup(vec![vec![0.0]; 5]).is_err(), "a short answer is an error");
        // Bad ranges from a cutter are dropped; a text left with none is embedded whole.
        let odd = PassagePlan::new(&["héllo".to_owned()], |_| vec![1..2, 3..3, 9..12]);
        assert_eq!(odd.texts(), ["héllo"]);
    }

    #[test]
    fn retryability_is_classified() {
        assert!(EmbedError::Network { endpoint: "e".into(), message: "m".into() }.is_retryable());
        assert!(EmbedError::Http { status: 503, body: String::new() }.is_retryable());
        assert!(EmbedError::Http { status: 429, body: String::new() }.is_retryable());
        assert!(!EmbedError::Http { status: 400, body: String::new() }.is_retryable());
        assert!(!EmbedError::Auth { message: "bad".into() }.is_retryable());
    }
}
