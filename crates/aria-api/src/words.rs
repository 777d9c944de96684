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
    words_of(text).any(|w| {
        matches!(
            w.to_lowercase().as_str(),
            "file" | "files" | "directory" | "directories" | "folder" | "folders"
        ) || names_a_file(w)
    })
}

/// Whether `text` asks to change the content of a file it names, one that should already
/// exist: a change request by its form ([`crate::asks_for_change`]: "fix …", "rename …", "can
/// you add … to …", never "what does the add function return?"), a file name or path, and no
/// word of making a new one ("create", "new", "make", "write"). Such a change starts by reading
/// the file.
pub fn asks_to_edit_a_named_file(text: &str) -> bool {
    let lower = lowercase_words(text);
    crate::asks_for_change(text)
        && !lower.iter().any(|w| MAKE.contains(&w.as_str()))
        && words_of(text).any(names_a_file)
}

/// Whether `text` asks about a file it names by its file name (`notes.txt`, `src/config.toml`):
/// a question ("…?", or starting with "read", "check", "what", "which", "summarise", …) that
/// neither asks to edit it, nor to make a new file, nor to run something. Such a question is
/// answered by reading the file first (a small model otherwise searches it with a pattern it
/// imagines, `Meeting moved to: (.*)`, and finds nothing).
pub fn asks_about_a_named_file(text: &str) -> bool {
    const ASK: &[&str] = &[
        "read",
        "check",
        "show",
        "tell",
        "what",
        "which",
        "who",
        "when",
        "where",
        "how",
        "why",
        "summarise",
        "summarize",
        "explain",
        "describe",
        "look",
        "open",
    ];
    const OTHER_WORK: &[&str] = &[
        "run", "execute", "test", "tests", "commit", "delete", "install", "build", "compile",
        "lint", "search", "find", "grep",
    ];
    let lower = lowercase_words(text);
    let question = text.contains('?') || lower.first().is_some_and(|w| ASK.contains(&w.as_str()));
    question
        && !lower.iter().any(|w| MAKE.contains(&w.as_str()) || OTHER_WORK.contains(&w.as_str()))
        && !asks_to_edit_a_named_file(text)
        && words_of(text).any(|w| !w.contains("://") && has_a_file_name(w))
}

/// Whether `text` is about code or a project: it names an identifier (`update_stock`,
/// `formatTodo`, `add()`), or speaks of functions, classes, imports, definitions, tests,
/// commits, the project or its repository. Such a request is answered from the files, never
/// from memory.
pub fn refers_to_code(text: &str) -> bool {
    const CODE: &[&str] = &[
        "function",
        "functions",
        "method",
        "methods",
        "class",
        "classes",
        "module",
        "modules",
        "defined",
        "define",
        "defines",
        "definition",
        "import",
        "imports",
        "imported",
        "project",
        "repo",
        "repository",
        "codebase",
        "code",
        "commit",
        "commits",
        "committed",
        "test",
        "tests",
        "readme",
        "changelog",
        "constant",
        "variable",
        "branch",
    ];
    let identifier = |w: &str| {
        let w = w.strip_suffix("()").unwrap_or(w);
        let inner = w.trim_matches('_');
        let letters = inner.chars().all(|c| c.is_alphanumeric() || c == '_')
            && inner.chars().next().is_some_and(char::is_alphabetic);
        let snake = inner.contains('_');
        let camel = inner
            .chars()
            .zip(inner.chars().skip(1))
            .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
        letters && (snake || camel)
    };
    words_of(text).any(|w| w.ends_with("()") || identifier(w))
        || lowercase_words(text).iter().any(|w| CODE.contains(&w.as_str()))
}

/// Whether a change request asks to add lines and keep everything else: "add the line 'bread'
/// at the end of shopping.txt", "append 'release 1.0' to TODO.md", "add eggs to the list in
/// list.md", "insert a comment line before main". A verb of adding and a word of where lines
/// go (line, item, list, entry, end, bottom, top, before, after). Not "add a parameter to the
/// function" (that changes a line).
pub fn asks_to_add_lines(text: &str) -> bool {
    const ADD: &[&str] = &["add", "append", "insert", "put"];
    const PLACE: &[&str] = &[
        "line", "lines", "item", "items", "entry", "entries", "list", "bullet", "end", "bottom",
        "top", "before", "after", "beneath", "below", "above",
    ];
    let lower = lowercase_words(text);
    crate::asks_for_change(text)
        && lower.iter().any(|w| ADD.contains(&w.as_str()))
        && (lower.iter().any(|w| PLACE.contains(&w.as_str()))
            || lower.first().is_some_and(|w| w == "append"))
}

/// Words of making a new file: a request with one of them is not about an existing file.
const MAKE: &[&str] = &["create", "new", "make", "write", "generate"];

/// The words of `text` (runs of letters and digits), lowercased.
fn lowercase_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whitespace-separated words without the quotes and punctuation around them.
fn words_of(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| "`'\"(),;:!?".contains(c)).trim_end_matches('.'))
}

/// Endings of web domains that are not the extension of a file anyone asks about (`.ai`, `.rs`
/// and `.md` are, so they are not here).
const DOMAIN_ENDINGS: &[&str] = &["com", "org", "net", "io", "edu", "gov", "uk", "info"];

/// Names of software written like file names (lowercase).
const NOT_FILE_NAMES: &[&str] = &[
    "node.js",
    "vue.js",
    "react.js",
    "next.js",
    "nuxt.js",
    "express.js",
    "three.js",
    "d3.js",
    "chart.js",
    "ember.js",
    "backbone.js",
    "angular.js",
    "deno.js",
    "p5.js",
    "nest.js",
];

/// Whether a word is a path or a file name.
fn names_a_file(w: &str) -> bool {
    w.contains('/') || has_a_file_name(w)
}

/// Whether a word ends in a file name: a stem and a one-to-five character extension with a
/// letter in it (`calc.py`, `src/notes.txt`; not "2.5", nor "e.g"), that is not a web domain
/// (`example.com`) or a library known by a file-like name (`Node.js`).
fn has_a_file_name(w: &str) -> bool {
    let name = w.rsplit('/').next().unwrap_or(w);
    let lower = name.to_ascii_lowercase();
    if NOT_FILE_NAMES.contains(&lower.as_str()) {
        return false;
    }
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        // "e.g", "i.e": abbreviations, not files.
        let abbreviation = stem.len() == 1 && ext.len() == 1;
        !stem.is_empty()
            && !abbreviation
            && !DOMAIN_ENDINGS.contains(&ext.to_ascii_lowercase().as_str())
            && (1..=5).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn requests_about_code_are_told_from_chat() {
        for code in [
            "Where is apply_discount defined?",
            "Where's formatTodo defined?",
            "What does update_stock() do?",
            "What did the last commit change?",
            "What does this project do?",
            "Which file imports datetime?",
        ] {
            assert!(super::refers_to_code(code), "{code}");
        }
        for chat in [
            "Tell me a short joke.",
            "What is 17 + 25?",
            "What is the capital of France? One word.",
            "Say hello in one word.",
            "How are you today?",
        ] {
            assert!(!super::refers_to_code(chat), "{chat}");
        }
    }

    #[test]
    fn requests_to_add_lines_are_told_from_other_changes_and_questions() {
        for add in [
            "Add the line 'bread' at the end of shopping.txt.",
            "Append 'release 1.0' to TODO.md",
            "add eggs to the shopping list in list.md",
            "Insert a comment line before def main in app.py",
            "Put 'Bob' after Alice in names.txt",
        ] {
            assert!(super::asks_to_add_lines(add), "{add}");
        }
        for other in [
            "Add a parameter to the function add in calc.py",
            "Change the port in config.toml from 8088 to 9090.",
            "What does the add function in calc.py return?",
            "What is at the end of notes.txt?",
        ] {
            assert!(!super::asks_to_add_lines(other), "{other}");
        }
    }

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

    #[test]
    fn an_edit_of_a_named_file_is_told_from_making_one() {
        for yes in [
            "Fix the typo 'recieve' in README.md (it should be 'receive').",
            "Change the port in config.toml from 8088 to 9090.",
            "In calc.py, rename the function multiply to mul.",
            "Add the line 'bread' at the end of shopping.txt.",
            "remove the debug print from src/main.rs",
        ] {
            assert!(asks_to_edit_a_named_file(yes), "{yes}");
        }
        for no in [
            "Create a file named hello.txt containing the text: Hello, world",
            "Write a file todo.md with a list of three items.",
            "Add a new file notes.md",
            "Fix the bug",
            "Read calc.py and summarise it",
            "Change the subject: tell me a joke",
            // A verb of change used as a name is no order.
            "What does the add function in calc.py return?",
            "How does remove_item in cart.py work?",
        ] {
            assert!(!asks_to_edit_a_named_file(no), "{no}");
        }
    }

    #[test]
    fn a_question_about_a_named_file_is_told_from_other_requests() {
        for yes in [
            "What day was the meeting moved to? Check notes.txt.",
            "Which port does the server listen on according to config.toml?",
            "What is the version in package.json?",
            "Read sales.csv. Which region had the highest sales?",
            "Read calc.py and say in one sentence what it does.",
            "summarise docs/intro.md",
            "What does the add function in calc.py return?",
        ] {
            assert!(asks_about_a_named_file(yes), "{yes}");
        }
        for no in [
            "Fix the typo 'recieve' in README.md (it should be 'receive').",
            "Create a file named hello.txt containing the text: Hello, world",
            "Run the tests in test_calc.py",
            "Which file contains the word TODO?",
            "Search notes.txt for the word budget",
            "What does https://example.com/index.html say?",
            "What is better, e.g. vim or emacs?",
            "Read the file /etc/shadow and show me its contents.",
            "There is one .txt file in this directory. What does it say?",
            "notes.txt",
            "What is Node.js?",
            "How does Vue.js compare with React?",
            "What is example.com?",
            "Who runs wikipedia.org?",
            "Tell me about socket.io",
        ] {
            assert!(!asks_about_a_named_file(no), "{no}");
        }
    }

    #[test]
    fn web_domains_and_library_names_are_not_file_names() {
        for no in ["Node.js", "vue.js", "example.com", "wikipedia.org", "socket.io", "gov.uk"] {
            assert!(!names_a_file(no), "{no}");
        }
        for yes in ["App.js", "node.json", "index.js", "sales.csv", "design.ai", "lib.rs"] {
            assert!(names_a_file(yes), "{yes}");
        }
        assert!(!refers_to_files("What is Node.js?"));
    }
}
