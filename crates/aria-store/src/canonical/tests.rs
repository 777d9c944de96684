use super::*;
use proptest::prelude::*;
use serde_json::json;

pub(crate) fn arb_json() -> impl Strategy<Value = Value> {
    let text = || prop::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Value::Number)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// Rebuilds `v` with every object's keys inserted in sorted order, so `serde_json` prints them
/// sorted whether or not `preserve_order` is on.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            Value::Object(entries.into_iter().map(|(k, v)| (k.clone(), sorted(v))).collect())
        }
        other => other.clone(),
    }
}

#[test]
fn keys_are_sorted_bytewise_at_every_level_without_whitespace() {
    let v =
        json!({"b": 1, "a": [{"z": null, "y": true}], "B": "x", "é": 1.5, "aa": {"d": 1, "c": 2}});
    assert_eq!(
        canonical_json(&v),
        r#"{"B":"x","a":[{"y":true,"z":null}],"aa":{"c":2,"d":1},"b":1,"é":1.5}"#
    );
}

#[test]
fn escapes_like_serde_json() {
    let s = "q\" b\\ /\u{8}\t\n\u{c}\r\u{0}\u{1f}\u{7f}é😀";
    let v = Value::String(s.to_owned());
    assert_eq!(canonical_json(&v), serde_json::to_string(&v).unwrap());
    assert_eq!(canonical_json(&v), "\"q\\\" b\\\\ /\\b\\t\\n\\f\\r\\u0000\\u001f\u{7f}é😀\"");
}

#[test]
fn numbers_print_like_serde_json() {
    let cases = [
        (json!(0), "0"),
        (json!(-1), "-1"),
        (json!(u64::MAX), "18446744073709551615"),
        (json!(i64::MIN), "-9223372036854775808"),
        (json!(1.0), "1.0"),
        (json!(0.1), "0.1"),
        (json!(1e300), "1e+300"),
        (json!(-2.5e-8), "-2.5e-8"),
    ];
    for (v, want) in cases {
        assert_eq!(canonical_json(&v), want);
        assert_eq!(canonical_json(&v), serde_json::to_string(&v).unwrap());
    }
}

#[test]
fn write_u64_matches_display() {
    for n in [0, 7, 10, 99, 1234567890, u64::MAX] {
        let mut out = Vec::new();
        write_u64(&mut out, n);
        assert_eq!(out, n.to_string().into_bytes());
    }
}

#[test]
fn invalid_utf8_bytes_pass_through_the_byte_escaper() {
    let mut out = Vec::new();
    write_json_string(&mut out, b"a\xff\"\x01");
    assert_eq!(out, b"\"a\xff\\\"\\u0001\"");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn round_trips(v in arb_json()) {
        let text = canonical_json(&v);
        let parsed: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(&parsed, &v);
        prop_assert_eq!(canonical_json(&parsed), text);
    }

    #[test]
    fn equals_serde_json_output_of_the_sorted_value(v in arb_json()) {
        prop_assert_eq!(canonical_json(&v), serde_json::to_string(&sorted(&v)).unwrap());
    }

    #[test]
    fn any_string_escapes_like_serde_json(chars in prop::collection::vec(any::<char>(), 0..64)) {
        let v = Value::String(String::from_iter(chars));
        prop_assert_eq!(canonical_json(&v), serde_json::to_string(&v).unwrap());
    }
}
