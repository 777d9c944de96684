//! Names of files ARIA refuses to touch even inside a root: where keys, credentials and
//! environment secrets are usually kept, which no model needs to see.
//!
//! Patterns are simple globs matched against one path component at a time, case-insensitively:
//! `*` matches any run of characters, `?` exactly one, everything else itself. A trailing `/`
//! (`.ssh/`) documents "a directory with this name anywhere on the path"; because every component
//! is checked, such a pattern also refuses a plain file of that name, which is the safe reading.

use crate::guard::path::GuardError;

/// The defaults, used unless `[scope] sensitive` replaces them.
const DEFAULT_GLOBS: &[&str] = &[
    ".env*",
    "*.pem",
    "*.key",
    ".ssh/",
    "id_rsa*",
    "id_ed25519*",
    "id_ecdsa*",
    "credentials*",
    ".netrc",
    ".git-credentials",
    ".aws/",
];

#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    /// As configured, for messages.
    text: String,
    /// Lower-cased glob without the trailing `/`.
    glob: Vec<char>,
}

/// A set of sensitive-name globs. [`Default`] gives the built-in list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SensitivePatterns {
    patterns: Vec<Pattern>,
}

impl Default for SensitivePatterns {
    fn default() -> Self {
        let patterns = DEFAULT_GLOBS.iter().map(|g| compile(g)).collect();
        SensitivePatterns { patterns }
    }
}

impl SensitivePatterns {
    /// Patterns from configuration; they replace the defaults (start from
    /// [`SensitivePatterns::default`] and use [`SensitivePatterns::extended`] to add to them).
    pub fn from_globs(globs: &[String]) -> Result<Self, GuardError> {
        let mut patterns = Vec::with_capacity(globs.len());
        for g in globs {
            validate(g)?;
            patterns.push(compile(g));
        }
        Ok(SensitivePatterns { patterns })
    }

    /// These patterns plus `globs`.
    pub fn extended(mut self, globs: &[String]) -> Result<Self, GuardError> {
        let more = SensitivePatterns::from_globs(globs)?;
        self.patterns.extend(more.patterns);
        Ok(self)
    }

    /// The configured globs, in order.
    pub fn globs(&self) -> impl Iterator<Item = &str> {
        self.patterns.iter().map(|p| p.text.as_str())
    }

    /// The first pattern that matches one path component (a file or directory name), if any.
    pub fn matching(&self, component: &str) -> Option<&str> {
        if self.patterns.is_empty() {
            return None;
        }
        let name: Vec<char> = component.chars().flat_map(char::to_lowercase).collect();
        self.patterns.iter().find(|p| glob_match(&p.glob, &name)).map(|p| p.text.as_str())
    }
}

fn validate(glob: &str) -> Result<(), GuardError> {
    let bad = |why: &'static str| GuardError::BadPattern { pattern: glob.to_owned(), why };
    let body = glob.strip_suffix('/').unwrap_or(glob);
    if body.is_empty() {
        return Err(bad("it is empty"));
    }
    if body.contains('/') {
        return Err(bad(
            "it contains '/' other than at the end; patterns match one file or directory name, so write `name` or `dir/`",
        ));
    }
    if body.chars().any(char::is_control) {
        return Err(bad("it contains a control character"));
    }
    Ok(())
}

fn compile(glob: &str) -> Pattern {
    let body = glob.strip_suffix('/').unwrap_or(glob);
    Pattern { text: glob.to_owned(), glob: body.chars().flat_map(char::to_lowercase).collect() }
}

/// Iterative wildcard match with single-star backtracking: O(len(glob) * len(name)) worst case.
fn glob_match(glob: &[char], name: &[char]) -> bool {
    let (mut g, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match glob.get(g) {
            Some('*') => {
                star = Some((g, n));
                g += 1;
            }
            Some('?') => {
                g += 1;
                n += 1;
            }
            Some(c) if *c == name[n] => {
                g += 1;
                n += 1;
            }
            _ => match star {
                Some((sg, sn)) => {
                    g = sg + 1;
                    n = sn + 1;
                    star = Some((sg, sn + 1));
                }
                None => return false,
            },
        }
    }
    glob[g..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(glob: &str, name: &str) -> bool {
        let p = compile(glob);
        let name: Vec<char> = name.chars().flat_map(char::to_lowercase).collect();
        glob_match(&p.glob, &name)
    }

    #[test]
    fn glob_basics() {
        assert!(m("*.pem", "server.pem"));
        assert!(m("*.pem", ".pem"));
        assert!(!m("*.pem", "pem"));
        assert!(!m("*.pem", "server.pem.txt"));
        assert!(m(".env*", ".env"));
        assert!(m(".env*", ".env.local"));
        assert!(!m(".env*", "environment"));
        assert!(!m(".env*", "x.env"));
        assert!(m("id_rsa*", "id_rsa.pub"));
        assert!(m("a?c", "abc"));
        assert!(!m("a?c", "ac"));
        assert!(m("*a*b*", "xxaxxbxx"));
        assert!(!m("*a*b*", "xxbxxaxx"));
        assert!(m(".ssh/", ".ssh"));
        assert!(m("*", ""));
        assert!(!m("a", ""));
    }

    #[test]
    fn matching_is_case_insensitive_and_names_the_pattern() {
        let p = SensitivePatterns::default();
        assert_eq!(p.matching("SERVER.PEM"), Some("*.pem"));
        assert_eq!(p.matching(".ENV"), Some(".env*"));
        assert_eq!(p.matching(".SSH"), Some(".ssh/"));
        assert_eq!(p.matching("Credentials.json"), Some("credentials*"));
        assert_eq!(p.matching("notes.txt"), None);
        assert_eq!(p.matching("keys"), None);
    }

    #[test]
    fn defaults_are_the_design_list() {
        let p = SensitivePatterns::default();
        assert_eq!(p.globs().collect::<Vec<_>>(), DEFAULT_GLOBS);
    }

    #[test]
    fn extended_keeps_the_defaults() {
        let p = SensitivePatterns::default().extended(&["*.kdbx".into()]).unwrap();
        assert_eq!(p.matching("vault.KDBX"), Some("*.kdbx"));
        assert_eq!(p.matching(".env"), Some(".env*"));
    }

    #[test]
    fn pathological_globs_stay_fast() {
        let glob = "*a".repeat(50);
        let name = "a".repeat(10_000) + "b";
        assert!(!m(&glob, &name));
    }
}
