//! What a user's message is about, read from its words (no model involved).

/// What every note ARIA itself adds to a conversation for the model starts with (they are sent
/// as user messages, but are not the user's request).
pub const ARIA_NOTE: &str = "[ARIA] ";

/// Whether `text` is one of ARIA's own notes to the model.
pub fn is_aria_note(text: &str) -> bool {
    text.starts_with(ARIA_NOTE)
}

/// Whether `text` refers to files: the words "file", "directory" or "folder" (or their
/// plurals), a path (a word with `/`), or a file name (`calc.py`, `notes.txt`: a stem and a
/// one-to-five character extension with a letter in it, so "2.5" is not one).
pub fn refers_to_files(text: &str) -> bool {
    text.split_whitespace().any(|w| {
        let w = w.trim_matches(|c: char| "`'\"(),;:!?".contains(c)).trim_end_matches('.');
        let lower = w.to_lowercase();
        matches!(
            lower.as_str(),
            "file" | "files" | "directory" | "directories" | "folder" | "folders"
        ) || w.contains('/')
            || w.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && (1..=5).contains(&ext.len())
                    && ext.chars().all(|c| c.is_ascii_alphanumeric())
                    && ext.chars().any(|c| c.is_ascii_alphabetic())
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_paths_and_file_names_are_references_to_files() {
        for yes in [
            "Read calc.py and summarise it",
            "What day was the meeting moved to? Check notes.txt.",
            "List the files in this directory.",
            "Which file contains the word TODO?",
            "fix the typo in `docs/intro.md`.",
            "Make a folder for the photos",
            "How many .py files are here?",
        ] {
            assert!(refers_to_files(yes), "{yes}");
        }
        for no in [
            "Tell me a short joke.",
            "What is 17 + 25? Answer with the number only.",
            "add 2.5 and 3",
            "What is the capital of France? One word.",
            "Hello!",
        ] {
            assert!(!refers_to_files(no), "{no}");
        }
    }
}
