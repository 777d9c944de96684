//! The code map of a project's overview: each source file with the names it defines at its top
//! level and the modules it imports (`inventory/report.py: low_stock; imports datetime`), read
//! line by line without running anything. A small model asked "where is apply_discount defined?" or "which file has the Item
//! class?" otherwise guesses a file from the name; with the map it knows which one to open.
//!
//! Only definitions at the start of a line are taken (top level), in Python, JavaScript and
//! TypeScript, Rust and Go; only names made of letters, digits and `_` are kept, so nothing a
//! file says can reach the model through the map but its identifiers.

use std::path::Path;

/// Most characters of the map.
pub const MAX_MAP_CHARS: usize = 1_100;
/// Most source files looked at.
const MAX_FILES: usize = 80;
/// Most bytes read of one file.
const MAX_FILE_BYTES: u64 = 256 * 1024;
/// How deep below the root files are looked for.
const MAX_DEPTH: usize = 4;
/// Most names listed for one file.
const MAX_NAMES: usize = 8;

/// The map's lines (`path: name, name`), or empty when no source file defines anything.
pub fn code_map(root: &Path, skipped: &[&str]) -> String {
    let mut files = Vec::new();
    collect(root, root, skipped, 0, &mut files);
    files.sort();
    let mut out = String::new();
    let mut left_out = 0;
    for relative in files.iter().take(MAX_FILES) {
        let (names, imports) = definitions(&root.join(relative));
        if names.is_empty() && imports.is_empty() {
            continue;
        }
        let more = names.len().saturating_sub(MAX_NAMES);
        let mut line =
            format!("\n  {relative}: {}", names[..names.len().min(MAX_NAMES)].join(", "));
        if more > 0 {
            line.push_str(&format!(" (+{more})"));
        }
        if !imports.is_empty() {
            let shown = &imports[..imports.len().min(MAX_NAMES)];
            line.push_str(&format!("; imports {}", shown.join(", ")));
        }
        if out.len() + line.len() > MAX_MAP_CHARS {
            left_out += 1;
            continue;
        }
        out.push_str(&line);
    }
    if left_out > 0 {
        out.push_str(&format!("\n  … {left_out} more files"));
    }
    out
}

/// Source files under `dir` (paths relative to `root`, `/`-separated), hidden and skipped
/// directories left out, symbolic links not followed.
fn collect(root: &Path, dir: &Path, skipped: &[&str], depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.filter_map(Result::ok) {
        let Ok(name) = entry.file_name().into_string() else { continue };
        let Ok(kind) = entry.file_type() else { continue };
        // Enough files to choose from: stop walking (a large tree is not read whole at every
        // start).
        if out.len() >= MAX_FILES * 4 {
            return;
        }
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if kind.is_dir() && depth < MAX_DEPTH && !skipped.contains(&name.as_str()) {
            collect(root, &path, skipped, depth + 1, out);
        } else if kind.is_file()
            && language(&name).is_some()
            && let Ok(relative) = path.strip_prefix(root)
        {
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Language {
    Python,
    Script,
    Rust,
    Go,
}

fn language(name: &str) -> Option<Language> {
    let ext = name.rsplit_once('.')?.1;
    match ext {
        "py" => Some(Language::Python),
        "js" | "mjs" | "cjs" | "ts" | "tsx" | "jsx" => Some(Language::Script),
        "rs" => Some(Language::Rust),
        "go" => Some(Language::Go),
        _ => None,
    }
}

/// The names `path` defines at its top level, and the modules it imports, each in order.
fn definitions(path: &Path) -> (Vec<String>, Vec<String>) {
    let none = (Vec::new(), Vec::new());
    let Some(language) = path.file_name().and_then(|n| n.to_str()).and_then(language) else {
        return none;
    };
    let Ok(file) = std::fs::File::open(path) else { return none };
    let mut text = String::new();
    if std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_FILE_BYTES), &mut text)
        .is_err()
    {
        return none;
    }
    let (mut names, mut imports): (Vec<String>, Vec<String>) = none;
    for line in text.lines() {
        if let Some(name) = defined(line, language)
            && !names.contains(&name)
        {
            names.push(name);
        }
        for module in imported(line, language) {
            if !imports.contains(&module) {
                imports.push(module);
            }
        }
    }
    (names, imports)
}

/// The modules a top-level line imports: `import a, b.c` and `from x import y` (Python),
/// `require('x')` and `import … from 'x'` (JavaScript, TypeScript), `use x::…` (Rust, the first
/// segment), `import "x"` (Go, one line). Only module-name characters are kept.
fn imported(line: &str, language: Language) -> Vec<String> {
    let module_chars = |s: &str| -> Option<String> {
        let name: String = s
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | '@' | ':'))
            .collect();
        let name = name.trim_end_matches(['.', ':', '/']).to_owned();
        (!name.is_empty()).then_some(name)
    };
    let quoted = |s: &str| -> Option<String> {
        let start = s.find(['\'', '"'])?;
        module_chars(&s[start + 1..])
    };
    match language {
        Language::Python => {
            if let Some(rest) = line.strip_prefix("import ") {
                rest.split(',').filter_map(|m| module_chars(m.trim())).collect()
            } else if let Some(rest) = line.strip_prefix("from ") {
                module_chars(rest).into_iter().collect()
            } else {
                Vec::new()
            }
        }
        Language::Script => {
            if let Some(at) = line.find("require(") {
                quoted(&line[at..]).into_iter().collect()
            } else if line.starts_with("import ") || line.starts_with("export ") {
                match line.rfind(" from ") {
                    Some(at) => quoted(&line[at..]).into_iter().collect(),
                    None if line.starts_with("import ") => quoted(line).into_iter().collect(),
                    None => Vec::new(),
                }
            } else {
                Vec::new()
            }
        }
        Language::Rust => line
            .strip_prefix("use ")
            .or_else(|| line.strip_prefix("pub use "))
            .and_then(|rest| module_chars(rest.split("::").next().unwrap_or(rest)))
            .filter(|m| !matches!(m.as_str(), "crate" | "self" | "super"))
            .into_iter()
            .collect(),
        Language::Go => line.strip_prefix("import ").and_then(quoted).into_iter().collect(),
    }
}

/// The name a top-level line defines, if it is a definition.
fn defined(line: &str, language: Language) -> Option<String> {
    let keywords: &[&str] = match language {
        Language::Python => &["def ", "async def ", "class "],
        Language::Script => &[
            "function ",
            "async function ",
            "class ",
            "export function ",
            "export async function ",
            "export class ",
            "export default function ",
            "export default class ",
            "export const ",
            "export interface ",
            "export type ",
            "interface ",
        ],
        Language::Rust => &[
            "fn ",
            "pub fn ",
            "async fn ",
            "pub async fn ",
            "struct ",
            "pub struct ",
            "enum ",
            "pub enum ",
            "trait ",
            "pub trait ",
            "const ",
            "pub const ",
            "type ",
            "pub type ",
        ],
        Language::Go => &["func ", "type "],
    };
    let rest = keywords.iter().find_map(|k| line.strip_prefix(k))?;
    // Go methods: `func (s *Store) Add(` names `Add`.
    let rest = match (language, rest.strip_prefix('(')) {
        (Language::Go, Some(after)) => after.split_once(')')?.1.trim_start(),
        _ => rest,
    };
    let name: String =
        rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect();
    let word = !name.is_empty() && !name.chars().next().is_some_and(|c| c.is_ascii_digit());
    word.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_definitions_are_listed_per_file_in_each_language() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [
            (
                "inventory/pricing.py",
                "import json, os.path\nfrom datetime import date\nVAT = 0.2\n\ndef apply_discount(x):\n    def inner():\n        pass\n\nclass Cart:\n    def total(self): ...\n",
            ),
            (
                "src/format.js",
                "const fs = require('fs');\nconst MAX = 40;\nfunction formatTodo(t) {}\nmodule.exports = { formatTodo };\n",
            ),
            (
                "src/app.ts",
                "import { readFile } from \"node:fs/promises\";\nimport './polyfill';\nexport const MAX_TITLE_LENGTH = 60;\nexport async function load() {}\nexport interface Todo {}\n",
            ),
            (
                "lib.rs",
                "use serde::Serialize;\nuse crate::x;\npub struct Store;\nimpl Store {\n    pub fn add() {}\n}\nfn helper() {}\n",
            ),
            ("main.go", "func (s *Store) Add(x int) {}\ntype Store struct{}\n"),
            ("node_modules/dep/index.js", "function hidden() {}\n"),
            (".venv/x.py", "def hidden(): pass\n"),
            ("notes.txt", "def not_code(): pass\n"),
        ] {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        let map = code_map(root, &["node_modules"]);
        assert_eq!(
            map,
            "\n  inventory/pricing.py: apply_discount, Cart; imports json, os.path, datetime\
             \n  lib.rs: Store, helper; imports serde\
             \n  main.go: Add, Store\
             \n  src/app.ts: MAX_TITLE_LENGTH, load, Todo; imports node:fs/promises, ./polyfill\
             \n  src/format.js: formatTodo; imports fs"
        );
    }

    #[test]
    fn a_large_project_is_mapped_within_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..60 {
            let text: String =
                (0..12).map(|j| format!("def function_number_{j}():\n    pass\n")).collect();
            std::fs::write(dir.path().join(format!("module_{i:02}.py")), text).unwrap();
        }
        let map = code_map(dir.path(), &[]);
        assert!(map.chars().count() <= MAX_MAP_CHARS + 40, "{map}");
        assert!(map.contains("(+4)") && map.ends_with("more files"), "{map}");
    }
}
