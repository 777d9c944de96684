//! A few lines `file_read` adds after a JSON file's text: how many items each list holds and
//! how its fields' values are spread ("`done`: true in 4, false in 7").
//!
//! Small models read a JSON file well and count it badly ("There are 36 items" for 17): the
//! counts are what questions about such files ask, and exact counting is what a program does
//! better. The summary is computed from the parsed file, so it cannot disagree with it.

use std::collections::BTreeMap;

use serde_json::Value;

/// Largest file summarised: beyond this the text is cut anyway.
const MAX_BYTES: usize = 2 * 1024 * 1024;
/// Most lists described.
const MAX_LISTS: usize = 6;
/// A string field is counted by value when it has at most this many distinct values.
const MAX_DISTINCT: usize = 6;

/// The summary of `text` when it is a JSON object or array with at least one list, else
/// `None`.
pub(crate) fn summary(text: &str) -> Option<String> {
    let start = text.trim_start();
    if text.len() > MAX_BYTES || !(start.starts_with('{') || start.starts_with('[')) {
        return None;
    }
    let value: Value = serde_json::from_str(text).ok()?;
    let mut lists = Vec::new();
    match &value {
        Value::Array(items) => lists.push(("the file".to_owned(), items)),
        Value::Object(map) => {
            for (key, v) in map {
                if let Value::Array(items) = v {
                    lists.push((format!("`{key}`"), items));
                }
            }
        }
        _ => return None,
    }
    if lists.is_empty() {
        return None;
    }
    let lines: Vec<String> =
        lists.iter().take(MAX_LISTS).map(|(name, items)| list(name, items)).collect();
    Some(format!("[JSON summary, counted by ARIA]\n{}", lines.join("\n")))
}

/// One list: its length, what its items are, and for a list of objects how each field's
/// values are spread.
fn list(name: &str, items: &[Value]) -> String {
    let kinds = {
        let objects = items.iter().filter(|v| v.is_object()).count();
        if objects == items.len() && objects > 0 { "objects" } else { "items" }
    };
    let mut line = format!("{name}: a list of {} {kinds}", items.len());
    if kinds != "objects" {
        return line;
    }
    // Field → value → count, for booleans, nulls, zeros and strings with few values.
    let mut fields: BTreeMap<&str, BTreeMap<String, usize>> = BTreeMap::new();
    let mut distinct_strings: BTreeMap<&str, usize> = BTreeMap::new();
    for item in items.iter().filter_map(Value::as_object) {
        for (key, v) in item {
            let shown = match v {
                Value::Bool(b) => Some(b.to_string()),
                Value::Null => Some("null".to_owned()),
                Value::Number(n) if n.as_f64() == Some(0.0) => Some("0".to_owned()),
                Value::String(s) if s.chars().count() <= 24 => Some(format!("{s:?}")),
                _ => None,
            };
            if let Some(shown) = shown {
                let counts = fields.entry(key).or_default();
                if v.is_string() && !counts.contains_key(&shown) {
                    *distinct_strings.entry(key).or_default() += 1;
                }
                *counts.entry(shown).or_default() += 1;
            }
        }
    }
    let mut parts = Vec::new();
    for (field, counts) in fields {
        if distinct_strings.get(field).is_some_and(|n| *n > MAX_DISTINCT) {
            continue;
        }
        // A string field whose values are all different (names, ids) says nothing counted.
        if distinct_strings.get(field).is_some_and(|n| *n == items.len() && *n > 1) {
            continue;
        }
        let spread: Vec<String> =
            counts.iter().map(|(value, n)| format!("{value} in {n}")).collect();
        parts.push(format!("`{field}` {}", spread.join(", ")));
    }
    if !parts.is_empty() {
        line.push_str(&format!(" ({})", parts.join("; ")));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_counted_with_their_fields_spread() {
        let text = r#"{"todos": [
            {"id": 1, "title": "a", "done": true, "state": "open"},
            {"id": 2, "title": "b", "done": false, "state": "open"},
            {"id": 3, "title": "c", "done": false, "state": "closed", "quantity": 0}
        ], "owner": "me"}"#;
        assert_eq!(
            summary(text).unwrap(),
            "[JSON summary, counted by ARIA]\n`todos`: a list of 3 objects (`done` false in 2, \
             true in 1; `quantity` 0 in 1; `state` \"closed\" in 1, \"open\" in 2)"
        );
        assert_eq!(
            summary("[1, 2, 3]").unwrap(),
            "[JSON summary, counted by ARIA]\nthe file: a list of 3 items"
        );
    }

    #[test]
    fn anything_but_json_with_a_list_has_no_summary() {
        for text in ["", "hello", "{\"a\": 1}", "{broken", "42", "\"[1]\""] {
            assert_eq!(summary(text), None, "{text}");
        }
    }
}
