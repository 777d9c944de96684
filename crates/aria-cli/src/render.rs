//! Small text helpers for terminal output.

/// The first line of `text`, at most `max` characters, with `…` when cut.
pub fn clip(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max && !text.contains('\n') {
        return line.to_owned();
    }
    let mut out: String = line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn clips_on_characters_and_lines() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("ééééééé", 4), "ééé…");
        assert_eq!(clip("one\ntwo", 10), "one…");
    }
}

/// Streams a model's text to the user without ARIA's tool-output markers: complete lines pass
/// through [`aria_core::strip_markers`]; a partial line is printed at once unless it might be
/// the start of a marker (`<` or `‹`), in which case it waits for the rest of its line.
#[derive(Debug, Default)]
pub struct MarkerFilter {
    pending: String,
}

impl MarkerFilter {
    /// The text that can be shown now, given the next delta.
    pub fn push(&mut self, delta: &str) -> String {
        self.pending.push_str(delta);
        let mut out = String::new();
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            out.push_str(&Self::line(&line));
        }
        if !self.pending.contains(['<', '‹']) {
            out.push_str(&std::mem::take(&mut self.pending));
        }
        out
    }

    /// Whatever is still held back, at the end of the stream.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        Self::line(&rest)
    }

    fn line(line: &str) -> String {
        match aria_core::strip_markers(line) {
            std::borrow::Cow::Borrowed(same) => same.to_owned(),
            std::borrow::Cow::Owned(stripped) if stripped.is_empty() => String::new(),
            std::borrow::Cow::Owned(stripped) => {
                if line.ends_with('\n') {
                    stripped + "\n"
                } else {
                    stripped
                }
            }
        }
    }
}

#[cfg(test)]
mod marker_filter_tests {
    use super::MarkerFilter;

    #[test]
    fn markers_split_across_deltas_never_reach_the_screen() {
        let mut f = MarkerFilter::default();
        let mut shown = String::new();
        for delta in [
            "Hello ",
            "world\n<<tool_",
            "output id=ab12>>\nThe ",
            "code is 42.",
            "\n<</tool_output id=ab12>>",
        ] {
            shown.push_str(&f.push(delta));
        }
        shown.push_str(&f.finish());
        assert_eq!(shown, "Hello world\nThe code is 42.\n");
        let mut f = MarkerFilter::default();
        assert_eq!(f.push("a < b"), "");
        assert_eq!(f.push(" and c\n"), "a < b and c\n");
    }
}
