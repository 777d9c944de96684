//! The redaction hook: whoever writes logs, audit payloads or model input asks a [`Redact`] to
//! remove secrets first. Implementations live in `aria-tools`; this crate only names the contract.

use std::borrow::Cow;

/// Removes secret values from text. Implementations must be cheap when nothing matches
/// (return `Cow::Borrowed`) because they run on every log line.
pub trait Redact: Send + Sync + std::fmt::Debug {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str>;
}

/// A redactor that changes nothing. For tests and tools that have nothing to hide.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRedact;

impl Redact for NoRedact {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        Cow::Borrowed(text)
    }
}

/// Redacts every string (keys included) inside a JSON value in place.
pub fn redact_json(redactor: &dyn Redact, value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            if let Cow::Owned(clean) = redactor.redact(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_json(redactor, v)),
        Value::Object(map) => {
            let needs_key_change = map.keys().any(|k| matches!(redactor.redact(k), Cow::Owned(_)));
            if needs_key_change {
                let old = std::mem::take(map);
                for (k, mut v) in old {
                    redact_json(redactor, &mut v);
                    map.insert(redactor.redact(&k).into_owned(), v);
                }
            } else {
                map.values_mut().for_each(|v| redact_json(redactor, v));
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug)]
    struct Hide(&'static str);
    impl Redact for Hide {
        fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
            if text.contains(self.0) {
                Cow::Owned(text.replace(self.0, "[REDACTED]"))
            } else {
                Cow::Borrowed(text)
            }
        }
    }

    #[test]
    fn redacts_nested_strings_and_keys() {
        let mut v = json!({"a": ["x s3cr3t y", 1, {"s3cr3t": "s3cr3t"}], "b": null});
        redact_json(&Hide("s3cr3t"), &mut v);
        assert_eq!(v, json!({"a": ["x [REDACTED] y", 1, {"[REDACTED]": "[REDACTED]"}], "b": null}));
    }
}
