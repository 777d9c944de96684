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
