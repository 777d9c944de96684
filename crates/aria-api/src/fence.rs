//! The fence around every tool result a model is shown, and the names of the file tools other
//! crates reason about. One place for both, so the loop that writes the fence and the front
//! ends and embedded provider that read it cannot drift apart.
//!
//! ```text
//! <<tool_output id=5f0c…>>
//! …the tool's output…
//! <</tool_output id=5f0c…>>
//! ```
//!
//! The id is fresh for every run; `aria-core` makes it and defuses any marker inside the body
//! before calling [`fence`].

/// The tool that reads a file.
pub const READ_FILE_TOOL: &str = "file_read";
/// The tool that changes files by a unified diff.
pub const PATCH_TOOL: &str = "apply_patch";
/// The tool that writes a whole file.
pub const WRITE_FILE_TOOL: &str = "file_write";
/// The tool that replaces one exact piece of text in a file.
pub const EDIT_FILE_TOOL: &str = "file_edit";
/// The tool that adds lines to a file.
pub const INSERT_FILE_TOOL: &str = "file_insert";
/// The tools whose success means files changed.
pub const CHANGE_TOOLS: [&str; 4] = [EDIT_FILE_TOOL, INSERT_FILE_TOOL, PATCH_TOOL, WRITE_FILE_TOOL];

/// `body` between the opening and closing lines of the fence with this `id`. The caller has
/// already defused any marker inside `body`.
pub fn fence(id: &str, body: &str) -> String {
    format!("<<tool_output id={id}>>\n{body}\n<</tool_output id={id}>>")
}

/// The content of a block made by [`fence`] (whatever its id), or `None` if `text` is not
/// exactly one such block.
pub fn untrusted_body(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("<<tool_output id=")?;
    let (id, rest) = rest.split_once(">>\n")?;
    rest.strip_suffix(&format!("\n<</tool_output id={id}>>"))
}

/// Whether a tool result says the call failed or was refused: ARIA writes `error: …` and
/// `refused: …`, fenced or not.
pub fn tool_failed(content: &str) -> bool {
    let body = untrusted_body(content).unwrap_or(content).trim_start();
    body.starts_with("error:") || body.starts_with("refused:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fenced_body_reads_back_and_anything_else_does_not() {
        let block = fence("0123abcd", "line one\nline two");
        assert_eq!(untrusted_body(&block), Some("line one\nline two"));
        assert_eq!(untrusted_body(&fence("ab", "")), Some(""));
        // Another id at the end, text around the block, a block cut short: not one block.
        assert_eq!(untrusted_body("<<tool_output id=ab>>\nx\n<</tool_output id=cd>>"), None);
        assert_eq!(untrusted_body(&format!("{block}\nmore")), None);
        assert_eq!(untrusted_body("<<tool_output id=ab>>\nx"), None);
        assert_eq!(untrusted_body("plain text"), None);
    }

    #[test]
    fn failures_and_refusals_are_told_apart_from_results() {
        assert!(tool_failed(&fence("1", "error: no such file")));
        assert!(tool_failed(&fence("1", "  refused: outside the roots")));
        assert!(tool_failed("error: not fenced"));
        assert!(!tool_failed(&fence("1", "the file says error: none")));
        assert!(!tool_failed(&fence("1", "ok")));
    }
}
