//! What long-term memory lets through, both ways:
//!
//! - **Recall** ([`relevant`]): search always returns its best hits, however poor, so a
//!   handful of stored memories would ride along with every request. Automatic recall keeps a
//!   hit only when it is close to the message (cosine similarity at or above a floor) or, with
//!   no vector to compare, when the full-text search matched its words. The context builder
//!   then caps what is left at [`crate::context::MEMORY_TOKENS`].
//! - **Storing** ([`unjustified`]): a memory the model stores must come from the conversation.
//!   Text that restates the instructions the model was given (the system prompt, the framing
//!   of recalled memories) is refused, as is text copied from tool output unless the user
//!   asked for something to be remembered; otherwise some of its words must be the user's.

use std::collections::HashSet;

use crate::memory::MemoryHit;

/// The similarity floor of automatic recall for the embedded all-MiniLM-L6-v2 (and for any
/// embedder without a floor of its own). Measured with `aria memories search --json` on eight everyday memories
/// and ten messages: a message about something else scored at most 0.18 against any of them
/// ("Tell me a joke", "hello", "write a haiku about autumn"); the memory a message was about
/// scored 0.35 to 0.69 ("When do we ship to production?" against "The user deploys on
/// Fridays": 0.35).
pub const DEFAULT_RECALL_MIN_SIMILARITY: f64 = 0.3;

/// The similarity floor of automatic recall for granite-embedding-30m-english (the stronger
/// search embedder), whose cosine similarities sit close together. Measured (NumPy reference of
/// the same pack) on eight everyday memories and twelve messages: a message about something
/// else scored up to 0.64 against some memory ("Tell me a joke" 0.643, "hello" 0.635); the
/// memory a message was about scored 0.52 to 0.75 ("Write me a script to rename files" against
/// "The user prefers Python over JavaScript": 0.515). At 0.66 every unrelated message recalls
/// nothing, at the cost of the weakest related ones: recall with granite keeps less than with
/// all-MiniLM-L6-v2, which separates the two by a wide margin.
pub const GRANITE_RECALL_MIN_SIMILARITY: f64 = 0.66;

/// Whether automatic recall keeps `hit` for a message (see the module docs).
pub fn relevant(hit: &MemoryHit, min_similarity: f64) -> bool {
    match hit.similarity {
        Some(s) => s >= min_similarity,
        None => hit.text_match,
    }
}

/// What a memory the model wants to store is checked against.
#[derive(Debug, Default, Clone)]
pub struct Conversation<'a> {
    /// What the user said in this conversation.
    pub user: Vec<&'a str>,
    /// Tool results the model has seen.
    pub tool_output: Vec<&'a str>,
    /// What the assistant said: its claims are not the user's, unless a tool result backs them.
    pub assistant: Vec<&'a str>,
    /// Text the model was given as instructions or framing: never the user's own words.
    pub instructions: Vec<&'a str>,
}

/// Whether the turn that starts at `turn[0]` (the user's message) called a tool that may have
/// shown the model a file's content: anything but the memory tools and the web. What the model
/// keeps from such a turn is private.
pub fn turn_read_files(turn: &[aria_api::Message]) -> bool {
    turn.iter().flat_map(|m| &m.tool_calls).any(|c| {
        !matches!(c.name.as_str(), "memory_search" | "memory_store" | "web_fetch" | "web_search")
    })
}

/// Share of a memory's word triples found in a source for it to count as a copy.
const COPIED_SHARE: f64 = 0.5;
/// Share of a memory's content words the user must have used when nothing else justifies it.
const USER_SHARE: f64 = 0.25;
/// Share of a memory's content words the user used for it to be plainly theirs, whatever else
/// it resembles.
const USER_OWN_SHARE: f64 = 0.5;

/// Words that say nothing about what a memory is about (and the way memories refer to the
/// person: "the user's …").
const FILLER: &[&str] = &[
    "a", "about", "all", "also", "am", "an", "and", "are", "as", "at", "be", "been", "but", "by",
    "can", "do", "does", "for", "from", "has", "have", "he", "her", "his", "i", "in", "is", "it",
    "its", "me", "my", "not", "of", "on", "or", "our", "she", "so", "that", "the", "their", "them",
    "they", "this", "to", "user", "users", "was", "we", "were", "what", "when", "which", "who",
    "will", "with", "would", "you", "your",
];

/// Phrases by which a user asks for something to be kept.
const ASKED: &[&str] = &[
    "remember",
    "memorize",
    "memorise",
    "don't forget",
    "do not forget",
    "keep in mind",
    "note that",
    "make a note",
    "take note",
    "save this",
    "save that",
    "store this",
    "store that",
];

/// Why `content` should not be stored, or `None` when the conversation justifies it.
pub fn unjustified(content: &str, conversation: &Conversation<'_>) -> Option<String> {
    let mine = words(content);
    let meaning: Vec<&str> = mine.iter().map(String::as_str).filter(|w| !is_filler(w)).collect();
    if meaning.is_empty() {
        return Some(
            "the memory says nothing about the user; store one self-contained sentence of a \
             fact or preference the user stated"
                .into(),
        );
    }
    // The share of its content words that the user used.
    let said: HashSet<String> =
        conversation.user.iter().flat_map(|u| words(u)).map(|w| stem(&w)).collect();
    let shared = meaning.iter().filter(|w| said.contains(&stem(w))).count();
    let support = shared as f64 / meaning.len() as f64;
    // Words the user said outweigh a resemblance ("My favorite color is blue" may well match
    // an example in the instructions).
    let users_own = support >= USER_OWN_SHARE;
    if !users_own && copied(&mine, &conversation.instructions) {
        return Some(
            "the memory restates your instructions or the recalled memories, not something the \
             user said; store only facts and preferences from the user's own messages"
                .into(),
        );
    }
    // A word the assistant said that neither the user nor a tool result did is the assistant's
    // claim (a path it guessed, a count, an answer): a memory holding one would feed an
    // unverified claim back as the user's fact.
    if let Some(claim) = assistant_claim(&meaning, &said, conversation) {
        return Some(format!(
            "the memory holds what the assistant said (\"{claim}\"), not what the user said; \
             store only facts and preferences the user stated or confirmed"
        ));
    }
    let asked = conversation.user.iter().any(|u| {
        let u = u.to_lowercase();
        ASKED.iter().any(|p| u.contains(p))
    });
    if asked || users_own {
        return None;
    }
    if copied(&mine, &conversation.tool_output) {
        return Some(
            "the memory copies tool output, and the user did not ask for it to be remembered; \
             store only what the user said, or ask them whether to remember it"
                .into(),
        );
    }
    if shared == 0 || support < USER_SHARE {
        return Some(
            "nothing in the conversation supports this memory: the user did not say it; store \
             only facts and preferences the user stated, in their own terms"
                .into(),
        );
    }
    None
}

/// The first content word of a memory that only the assistant said (not the user, not a tool
/// result).
fn assistant_claim<'m>(
    meaning: &[&'m str],
    said: &HashSet<String>,
    conversation: &Conversation<'_>,
) -> Option<&'m str> {
    if conversation.assistant.is_empty() {
        return None;
    }
    let stems = |texts: &[&str]| -> HashSet<String> {
        texts.iter().flat_map(|t| words(t)).map(|w| stem(&w)).collect()
    };
    let assistant = stems(&conversation.assistant);
    let tools = stems(&conversation.tool_output);
    meaning.iter().copied().find(|w| {
        let s = stem(w);
        !said.contains(&s) && assistant.contains(&s) && !tools.contains(&s)
    })
}

/// Whether at least [`COPIED_SHARE`] of the word triples of `mine` occur in one of `sources`
/// (memories shorter than three words are never counted as copies).
fn copied(mine: &[String], sources: &[&str]) -> bool {
    if mine.len() < 3 || sources.is_empty() {
        return false;
    }
    let triples: Vec<String> = mine.windows(3).map(|w| w.join(" ")).collect();
    sources.iter().any(|source| {
        let theirs: HashSet<String> = words(source).windows(3).map(|w| w.join(" ")).collect();
        let found = triples.iter().filter(|t| theirs.contains(*t)).count();
        found as f64 >= COPIED_SHARE * triples.len() as f64
    })
}

/// Lowercase words of letters and digits (an apostrophe's `'s` is dropped).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
        .map(|w| {
            let w = w.trim_matches(|c| c == '\'' || c == '’').to_lowercase();
            w.strip_suffix("'s").or_else(|| w.strip_suffix("’s")).map(str::to_owned).unwrap_or(w)
        })
        .filter(|w| !w.is_empty())
        .collect()
}

fn is_filler(word: &str) -> bool {
    FILLER.contains(&word)
}

/// A crude English stem, enough to match "likes"/"like"/"liked", "mornings"/"morning":
/// a plural `s`, then `ing` or `ed`, then a final `e`, each only when three letters remain.
fn stem(word: &str) -> String {
    let strip = |w: &str, suffixes: &[&str]| -> String {
        for suffix in suffixes {
            if let Some(base) = w.strip_suffix(suffix)
                && base.chars().count() >= 3
            {
                return base.to_owned();
            }
        }
        w.to_owned()
    };
    let w = strip(word, &["s"]);
    let w = strip(&w, &["ing", "ed"]);
    strip(&w, &["e"])
}

#[cfg(test)]
mod tests;
