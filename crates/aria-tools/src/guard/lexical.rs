//! Checks on the path text itself, before the file system is consulted.
//!
//! Paths are taken literally: nothing is URL-decoded, `~` is not expanded, and `\` is not a
//! separator. Windows forms (`C:/…`, `c:name`, `\\server\share`, `a\b`) are refused with a
//! reason of their own, since a model that writes one meant a different file system.
//! Anything that only makes sense if some layer *would* decode or normalise it (percent escapes of `.` `/` `\` `%`, overlong UTF-8 escapes, look-alike slashes and dots,
//! bidirectional-override characters) is refused rather than guessed at.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::guard::path::PathRefusal;

/// Longest path accepted, in bytes (Linux `PATH_MAX`).
pub(crate) const MAX_PATH_BYTES: usize = 4096;
/// Longest single component accepted, in bytes (Linux `NAME_MAX`).
pub(crate) const MAX_NAME_BYTES: usize = 255;

/// One piece of a `/`-separated path, with `.` and `..` kept (std's `Path::components` drops
/// interior `.`, which `resolve_for_create` needs to see).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seg<'a> {
    Cur,
    Parent,
    Name(&'a OsStr),
}

/// Splits a path into segments; empty segments (`a//b`, trailing `/`) are dropped. Works on
/// bytes because symlink targets need not be UTF-8.
pub(crate) fn segments(path: &OsStr) -> Vec<Seg<'_>> {
    path.as_bytes()
        .split(|b| *b == b'/')
        .filter(|s| !s.is_empty())
        .map(|s| match s {
            b"." => Seg::Cur,
            b".." => Seg::Parent,
            name => Seg::Name(OsStr::from_bytes(name)),
        })
        .collect()
}

/// Every lexical rule, in the order a user would want to hear about them.
/// `first_root` is named in the `~` message as an example of an absolute path.
pub(crate) fn check(input: &str, first_root: &Path) -> Result<(), PathRefusal> {
    if input.trim().is_empty() {
        return Err(PathRefusal::Empty);
    }
    if let Some((position, _)) = input.char_indices().find(|(_, c)| c.is_control()) {
        return Err(PathRefusal::ControlCharacter {
            input: input.escape_debug().to_string(),
            position,
        });
    }
    if let Some(form) = windows_form(input) {
        return Err(PathRefusal::WindowsPath {
            input: input.to_owned(),
            form,
            root: first_root.to_path_buf(),
        });
    }
    if let Some(sequence) = encoded_sequence(input) {
        return Err(PathRefusal::EncodedSequence { input: input.to_owned(), sequence });
    }
    if let Some((character, why)) = odd_character(input) {
        return Err(PathRefusal::OddCharacter { input: input.to_owned(), character, why });
    }
    if is_home_form(input) {
        return Err(PathRefusal::Tilde { input: input.to_owned(), root: first_root.to_path_buf() });
    }
    if input.len() > MAX_PATH_BYTES {
        return Err(PathRefusal::TooLong {
            length: input.len(),
            limit: MAX_PATH_BYTES,
            what: "path",
        });
    }
    if let Some(long) = input.split('/').find(|s| s.len() > MAX_NAME_BYTES) {
        return Err(PathRefusal::TooLong {
            length: long.len(),
            limit: MAX_NAME_BYTES,
            what: "name",
        });
    }
    Ok(())
}

/// Which Windows form `input` is written in, if any: a drive letter (`C:/x`, `C:\x`, or
/// drive-relative `c:x`), a UNC share or device path (`\\server\share`, `\\?\C:\`), or
/// backslashes between names.
fn windows_form(input: &str) -> Option<&'static str> {
    let b = input.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Some("it starts with a drive letter such as \"C:\"");
    }
    if input.starts_with("\\\\") {
        return Some("a UNC share or device path, starting with two backslashes");
    }
    input.contains('\\').then_some("it uses '\\' between names")
}

/// `~`, `~/…` and `~user/…`: what a shell would expand to a home directory. A name that merely
/// starts with `~` and cannot be a user name (`~$report.docx`, an editor's lock file) is a name.
fn is_home_form(input: &str) -> bool {
    let Some(rest) = input.strip_prefix('~') else { return false };
    let user = rest.split('/').next().unwrap_or("");
    user.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// The first percent escape that would change the meaning of the path if anything decoded it.
fn encoded_sequence(input: &str) -> Option<String> {
    let bytes = input.as_bytes();
    let mut i = 0;
    while let Some(off) = bytes[i..].iter().position(|b| *b == b'%') {
        let at = i + off;
        let rest = &bytes[at + 1..];
        // IIS-style %uXXXX.
        if rest.len() >= 5
            && matches!(rest[0], b'u' | b'U')
            && rest[1..5].iter().all(|b| hex(*b).is_some())
        {
            return Some(input[at..at + 6].to_owned());
        }
        if let (Some(h), Some(l)) =
            (rest.first().and_then(|b| hex(*b)), rest.get(1).and_then(|b| hex(*b)))
        {
            let byte = (h << 4) | l;
            // '.', '/', '\', '%' (double encoding), control bytes, and any non-ASCII byte
            // (overlong forms such as %c0%ae live there; real paths are never URL-encoded).
            if matches!(byte, b'.' | b'/' | b'\\' | b'%') || !(0x20..0x7f).contains(&byte) {
                return Some(input[at..at + 3].to_owned());
            }
        }
        i = at + 1;
    }
    None
}

/// Characters that are separators or dots to some other system, or that hide what a name says.
fn odd_character(input: &str) -> Option<(char, &'static str)> {
    input.chars().find_map(|c| {
        let why = match c {
            '\\' => "a backslash, which is not a separator here but is one elsewhere",
            '\u{2215}' | '\u{2044}' | '\u{29f8}' | '\u{ff0f}' => "a look-alike of '/'",
            '\u{2216}' | '\u{29f9}' | '\u{fe68}' | '\u{ff3c}' => "a look-alike of '\\'",
            '\u{2024}' | '\u{fe52}' | '\u{ff0e}' => "a look-alike of '.'",
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' => {
                "a bidirectional-text control, which makes a name display differently from what it is"
            }
            '\u{feff}' | '\u{200b}' => "an invisible character",
            _ => return None,
        };
        Some((c, why))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_keep_dots() {
        let n = |s: &'static str| Seg::Name(OsStr::new(s));
        assert_eq!(
            segments(OsStr::new("/a//./b/../c/")),
            vec![n("a"), Seg::Cur, n("b"), Seg::Parent, n("c")]
        );
        assert_eq!(segments(OsStr::new("...")), vec![n("...")]);
    }

    #[test]
    fn windows_forms() {
        for input in
            ["C:/Users/x", "c:notes.txt", "C:\\x", "\\\\server\\share\\f", "\\\\?\\C:\\x", "a\\b"]
        {
            assert!(windows_form(input).is_some(), "{input:?}");
        }
        for input in ["a/b", "notes:v2.txt", "1:2", "./c:x", "//server/share"] {
            assert!(windows_form(input).is_none(), "{input:?}");
        }
    }

    #[test]
    fn home_forms() {
        for input in ["~", "~/x", "~root/.bashrc", "~root", "~a.b-c_d/x"] {
            assert!(is_home_form(input), "{input:?}");
        }
        for input in ["~$report.docx", "x/~", "a~", "~lock file.txt"] {
            assert!(!is_home_form(input), "{input:?}");
        }
    }

    #[test]
    fn encoded_sequences() {
        assert_eq!(encoded_sequence("a%2eb").as_deref(), Some("%2e"));
        assert_eq!(encoded_sequence("%u002E").as_deref(), Some("%u002E"));
        assert_eq!(encoded_sequence("%e2%80%99").as_deref(), Some("%e2"));
        assert_eq!(encoded_sequence("100%"), None);
        assert_eq!(encoded_sequence("a%20b%41"), None);
        assert_eq!(encoded_sequence("%2"), None);
        assert_eq!(encoded_sequence("%%2e").as_deref(), Some("%2e"));
        assert_eq!(encoded_sequence("%u12"), None);
    }

    #[test]
    fn multibyte_text_around_percent_signs_does_not_panic() {
        assert_eq!(encoded_sequence("é%é"), None);
        assert_eq!(encoded_sequence("%é2e"), None);
        assert_eq!(encoded_sequence("日本%2f").as_deref(), Some("%2f"));
    }
}
