//! The byte-exact definition of an audit record's hash, shared by appending, database
//! verification and offline bundle verification. See the crate docs ("The audit chain") for the
//! specification in words.

use sha2::{Digest, Sha256};

use crate::canonical::{write_json_string, write_u64};

/// `prev_hash` of the first record, and `session_prev_hash` of a session's first record and of
/// records without a session: 64 ASCII zeros.
pub const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The fields a record's hash covers besides `prev_hash`. Byte slices rather than `&str` so the
/// verifier can hash whatever a tamperer left in a column, valid UTF-8 or not.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordFields<'a> {
    pub seq: u64,
    pub time: &'a [u8],
    pub session_id: Option<&'a [u8]>,
    pub actor: &'a [u8],
    pub kind: &'a [u8],
    /// Canonical JSON text of the (already redacted) payload, inserted verbatim.
    pub payload: &'a [u8],
    pub session_prev_hash: &'a [u8],
}

/// Writes the hash input, `prev_hash ‖ canonical JSON of the record`, into `buf` (cleared
/// first). The keys are written in their sorted order by hand: `actor`, `kind`, `payload`,
/// `seq`, `session_id`, `session_prev_hash`, `time`.
pub(crate) fn write_preimage(buf: &mut Vec<u8>, prev_hash: &[u8], r: &RecordFields<'_>) {
    buf.clear();
    buf.extend_from_slice(prev_hash);
    buf.extend_from_slice(b"{\"actor\":");
    write_json_string(buf, r.actor);
    buf.extend_from_slice(b",\"kind\":");
    write_json_string(buf, r.kind);
    buf.extend_from_slice(b",\"payload\":");
    buf.extend_from_slice(r.payload);
    buf.extend_from_slice(b",\"seq\":");
    write_u64(buf, r.seq);
    buf.extend_from_slice(b",\"session_id\":");
    match r.session_id {
        Some(id) => write_json_string(buf, id),
        None => buf.extend_from_slice(b"null"),
    }
    buf.extend_from_slice(b",\"session_prev_hash\":");
    write_json_string(buf, r.session_prev_hash);
    buf.extend_from_slice(b",\"time\":");
    write_json_string(buf, r.time);
    buf.push(b'}');
}

/// The record's hash as 64 lowercase hex bytes. `buf` is scratch space, reused across calls.
pub(crate) fn record_hash(buf: &mut Vec<u8>, prev_hash: &[u8], r: &RecordFields<'_>) -> [u8; 64] {
    write_preimage(buf, prev_hash, r);
    hex_lower(&Sha256::digest(buf.as_slice()))
}

/// The record's hash as a `String`.
pub(crate) fn record_hash_string(
    buf: &mut Vec<u8>,
    prev_hash: &[u8],
    r: &RecordFields<'_>,
) -> String {
    record_hash(buf, prev_hash, r).iter().map(|&b| char::from(b)).collect()
}

fn hex_lower(digest: &[u8]) -> [u8; 64] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [b'0'; 64];
    for (pair, &byte) in out.chunks_exact_mut(2).zip(digest) {
        pair[0] = HEX[usize::from(byte >> 4)];
        pair[1] = HEX[usize::from(byte & 0xf)];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::canonical_json;
    use serde_json::json;

    /// The hand-ordered preimage is exactly the canonical JSON of the record object, so an
    /// offline verifier that uses any canonical JSON writer gets the same bytes.
    #[test]
    fn preimage_is_prev_hash_then_canonical_record() {
        let payload = json!({"b": [1, 2.5, "x\ny"], "a": null});
        let payload_text = canonical_json(&payload);
        for session in [None, Some("s-1\"q")] {
            let fields = RecordFields {
                seq: 42,
                time: b"2026-11-22T04:21:28.123Z",
                session_id: session.map(str::as_bytes),
                actor: b"tool:fs.read",
                kind: b"tool.start",
                payload: payload_text.as_bytes(),
                session_prev_hash: ZERO_HASH.as_bytes(),
            };
            let prev = "ab".repeat(32);
            let mut buf = Vec::new();
            write_preimage(&mut buf, prev.as_bytes(), &fields);
            let record = json!({
                "time": "2026-11-22T04:21:28.123Z", "seq": 42, "session_prev_hash": ZERO_HASH,
                "session_id": session, "payload": payload, "kind": "tool.start",
                "actor": "tool:fs.read",
            });
            assert_eq!(
                String::from_utf8(buf).unwrap(),
                format!("{prev}{}", canonical_json(&record))
            );
        }
    }

    #[test]
    fn hash_is_lowercase_hex_sha256_of_the_preimage() {
        let fields = RecordFields {
            seq: 1,
            time: b"t",
            session_id: None,
            actor: b"a",
            kind: b"k",
            payload: b"{}",
            session_prev_hash: ZERO_HASH.as_bytes(),
        };
        let mut buf = Vec::new();
        let got = record_hash_string(&mut buf, ZERO_HASH.as_bytes(), &fields);
        let want = hex::encode(Sha256::digest(
            format!(
                "{ZERO_HASH}{{\"actor\":\"a\",\"kind\":\"k\",\"payload\":{{}},\"seq\":1,\
                 \"session_id\":null,\"session_prev_hash\":\"{ZERO_HASH}\",\"time\":\"t\"}}"
            )
            .as_bytes(),
        ));
        assert_eq!(got, want);
        assert_eq!(got.len(), 64);
    }
}
