//! Documents, photos and voice notes sent to the bot: fetched (`getFile`, then the file URL; at
//! most 20 MB, Telegram's own limit for bots) and saved under the configured inbox (a directory
//! inside a root, `[telegram] inbox`) with a safe, unique name. A document or photo then starts a
//! run that tells the model where the file is, so it can read it with its file tools; a voice
//! note is only saved (transcription comes later).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::Telegram;

/// Telegram serves bots files up to 20 MB.
const MAX_BYTES: usize = 20 * 1024 * 1024;

/// What a message carries.
pub(super) struct Attachment {
    kind: &'static str,
    file_id: String,
    name: String,
    mime: Option<String>,
}

/// The attachment of a message, if it has one ARIA takes.
pub(super) fn attachment(message: &Value) -> Option<Attachment> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let unique = |v: &Value| text(v, "file_unique_id").unwrap_or_else(|| "file".into());
    if let Some(doc) = message.get("document") {
        return Some(Attachment {
            kind: "document",
            file_id: text(doc, "file_id")?,
            name: text(doc, "file_name").unwrap_or_else(|| unique(doc)),
            mime: text(doc, "mime_type"),
        });
    }
    if let Some(photo) = message.get("photo").and_then(Value::as_array).and_then(|p| p.last()) {
        return Some(Attachment {
            kind: "photo",
            file_id: text(photo, "file_id")?,
            name: format!("photo-{}.jpg", unique(photo)),
            mime: Some("image/jpeg".into()),
        });
    }
    let voice = message.get("voice")?;
    Some(Attachment {
        kind: "voice",
        file_id: text(voice, "file_id")?,
        name: format!("voice-{}.ogg", unique(voice)),
        mime: text(voice, "mime_type"),
    })
}

/// A file name that cannot leave the inbox or hide: letters, digits, `.`, `-`, `_` only, no
/// leading dot, at most 100 characters.
fn safe_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' })
        .collect();
    let cleaned = cleaned.trim_start_matches('.');
    let cleaned: String =
        cleaned.chars().rev().take(100).collect::<Vec<_>>().into_iter().rev().collect();
    if cleaned.is_empty() { "file".into() } else { cleaned }
}

/// Writes `bytes` to a new file in `inbox` (never over an existing one).
fn write_new(inbox: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    use std::io::Write;
    std::fs::create_dir_all(inbox)?;
    let stamp = time::OffsetDateTime::now_utc();
    let stamp = format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        stamp.year(),
        u8::from(stamp.month()),
        stamp.day(),
        stamp.hour(),
        stamp.minute(),
        stamp.second()
    );
    for n in 0..1000 {
        let candidate = if n == 0 {
            inbox.join(format!("{stamp}-{name}"))
        } else {
            inbox.join(format!("{stamp}-{n}-{name}"))
        };
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&candidate) {
            Ok(mut file) => {
                file.write_all(bytes)?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free file name in the inbox"))
}

/// Fetches and saves an attachment; a document or photo then goes to the model.
pub(super) async fn receive(tg: Arc<Telegram>, chat: i64, message: Value, found: Attachment) {
    let Some(inbox) = tg.config.inbox.clone() else {
        tg.say(
            chat,
            "I cannot take files yet: set [telegram] inbox in aria.toml to a directory inside \
             one of ARIA's roots, then restart aria serve.",
        );
        return;
    };
    let saved = async {
        let file = tg
            .bot
            .call_retrying("getFile", &json!({"file_id": found.file_id}), 3)
            .await
            .map_err(|e| e.to_string())?;
        if file.get("file_size").and_then(Value::as_u64).is_some_and(|n| n > MAX_BYTES as u64) {
            return Err("the file is larger than 20 MB".to_owned());
        }
        let path = file
            .get("file_path")
            .and_then(Value::as_str)
            .ok_or("Telegram gave no path for the file")?
            .to_owned();
        let bytes = tg.bot.download(&path, MAX_BYTES).await.map_err(|e| e.to_string())?;
        let name = safe_name(&found.name);
        let size = bytes.len();
        tokio::task::spawn_blocking(move || write_new(&inbox, &name, &bytes).map(|p| (p, size)))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot save it: {e}"))
    }
    .await;
    let (path, size) = match saved {
        Ok(saved) => saved,
        Err(e) => {
            tracing::warn!(chat, "a Telegram {} could not be saved: {e}", found.kind);
            tg.say(chat, &format!("⚠️ I could not save your {}: {e}", found.kind));
            return;
        }
    };
    let shown = path.display();
    // A file written under a root is a side effect: audited like the others.
    let event = aria_api::AuditEvent::new(
        None,
        "user",
        "telegram.file_saved",
        json!({"chat_id": chat, "kind": found.kind, "path": shown.to_string(), "bytes": size}),
    );
    if let Err(e) = tg.gw.store.audit_append(event) {
        tracing::error!(chat, "cannot audit a saved Telegram file: {e}");
    }
    if found.kind == "voice" {
        tg.say(chat, &format!("Saved your voice message as {shown}; I cannot listen to it yet."));
        return;
    }
    let caption = message.get("caption").and_then(Value::as_str).unwrap_or_default();
    let mime = found.mime.as_deref().unwrap_or("unknown type");
    let text = format!(
        "[The user sent a {} through Telegram. It is saved at {shown} ({mime}, {size} bytes); \
         read it with your file tools if the request needs it.]\n{caption}",
        found.kind
    );
    super::chat::start(&tg, chat, text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_in_the_inbox_and_visible() {
        assert_eq!(safe_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(safe_name(".env"), "env");
        assert_eq!(safe_name("résumé 2026.pdf"), "r_sum__2026.pdf");
        assert_eq!(safe_name("..."), "file");
        assert_eq!(safe_name(&"a".repeat(300)).len(), 100);
    }

    #[test]
    fn a_new_file_never_replaces_another() {
        let dir = tempfile::tempdir().unwrap();
        let a = write_new(dir.path(), "x.txt", b"1").unwrap();
        let b = write_new(dir.path(), "x.txt", b"2").unwrap();
        assert_ne!(a, b);
        assert_eq!(std::fs::read(&a).unwrap(), b"1");
        assert_eq!(std::fs::read(&b).unwrap(), b"2");
    }
}
