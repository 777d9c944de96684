//! `[telegram]`: which chats the Telegram channel serves and where the Bot API is. The bot's
//! token is a secret: it comes only from `TELEGRAM_BOT_TOKEN` (the environment or ARIA's
//! `.env`), never from this file, and is never shown.

use std::path::{Path, PathBuf};

use aria_gateway::telegram::BotToken;
use serde::{Deserialize, Serialize};

use super::{ConfigError, Env};

/// The official Bot API.
pub const DEFAULT_API_BASE: &str = "https://api.telegram.org";

/// `[telegram]` as written.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTelegram {
    /// The chats ARIA answers (a private chat's id is its user's id; a group's is negative).
    /// Nothing is served without it. Only this file sets it, never a chat.
    pub allowed_chat_ids: Option<Vec<i64>>,
    /// Who may use commands and approval buttons in an allowed group (default: the users of
    /// the allowed private chats).
    pub allowed_user_ids: Option<Vec<i64>>,
    /// The Bot API's base URL (default the official one; `TELEGRAM_API_BASE` wins), for a
    /// self-hosted Bot API server.
    pub api_base: Option<String>,
    /// Where documents, photos and voice notes sent to the bot are saved: a directory inside one
    /// of the roots (relative: inside the first root). Unset: files are not taken.
    pub inbox: Option<String>,
}

/// `[telegram]`, checked, with the token from the environment.
#[derive(Debug, Clone, Serialize)]
pub struct TelegramSettings {
    pub allowed_chat_ids: Vec<i64>,
    pub allowed_user_ids: Vec<i64>,
    pub api_base: String,
    pub inbox: Option<PathBuf>,
    /// `TELEGRAM_BOT_TOKEN`; the channel starts only with one.
    #[serde(skip)]
    pub token: Option<BotToken>,
}

impl Default for TelegramSettings {
    fn default() -> Self {
        TelegramSettings {
            allowed_chat_ids: Vec::new(),
            allowed_user_ids: Vec::new(),
            api_base: DEFAULT_API_BASE.into(),
            inbox: None,
            token: None,
        }
    }
}

impl TelegramSettings {
    pub fn to_raw(&self) -> RawTelegram {
        RawTelegram {
            allowed_chat_ids: Some(self.allowed_chat_ids.clone()),
            allowed_user_ids: Some(self.allowed_user_ids.clone()),
            api_base: Some(self.api_base.clone()),
            inbox: self.inbox.as_ref().map(|p| p.display().to_string()),
        }
    }
}

/// The inbox as an absolute path inside a root (not in a `.git` directory).
fn resolve_inbox(text: &str, roots: &[PathBuf], env: &dyn Env) -> Result<PathBuf, ConfigError> {
    let written = super::expand_tilde(text.trim(), env);
    let path = match roots.first() {
        Some(first) if written.is_relative() => first.join(&written),
        _ => written,
    };
    let path: PathBuf = path.components().collect();
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r) && p != r.as_path());
    let real = std::fs::canonicalize(&path).ok();
    let escapes = path.components().any(|c| matches!(c, std::path::Component::ParentDir));
    let in_git = path.components().any(|c| c.as_os_str() == ".git");
    if escapes
        || in_git
        || !inside(&path)
        || real.as_deref().is_some_and(|r| {
            !roots.iter().any(|root| {
                std::fs::canonicalize(root).is_ok_and(|root| r.starts_with(&root) && r != root)
            })
        })
    {
        return Err(ConfigError::Invalid(format!(
            "[telegram] inbox: {} is not a directory inside one of the roots ({}); write a \
             path inside one, e.g. `telegram-inbox` for one in the first root",
            path.display(),
            roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(path)
}

pub fn resolve_telegram(
    raw: RawTelegram,
    env: &dyn Env,
    roots: &[PathBuf],
) -> Result<TelegramSettings, ConfigError> {
    let inbox = raw.inbox.as_deref().map(|i| resolve_inbox(i, roots, env)).transpose()?;
    let allowed_chat_ids = raw.allowed_chat_ids.unwrap_or_default();
    if allowed_chat_ids.contains(&0) {
        return Err(ConfigError::Invalid(
            "[telegram] allowed_chat_ids: 0 is not a chat id; write the ids `aria telegram chats` \
             lists"
                .into(),
        ));
    }
    let allowed_user_ids = raw
        .allowed_user_ids
        .unwrap_or_else(|| allowed_chat_ids.iter().copied().filter(|id| *id > 0).collect());
    let api_base = env
        .var("TELEGRAM_API_BASE")
        .filter(|v| !v.trim().is_empty())
        .or(raw.api_base)
        .unwrap_or_else(|| DEFAULT_API_BASE.into())
        .trim()
        .trim_end_matches('/')
        .to_owned();
    if !(api_base.starts_with("https://") || api_base.starts_with("http://")) {
        return Err(ConfigError::Invalid(format!(
            "[telegram] api_base (or TELEGRAM_API_BASE): `{api_base}` is not an http(s) URL; \
             leave it out for {DEFAULT_API_BASE}"
        )));
    }
    let token = env.var("TELEGRAM_BOT_TOKEN").filter(|t| !t.trim().is_empty()).map(BotToken::new);
    Ok(TelegramSettings { allowed_chat_ids, allowed_user_ids, api_base, inbox, token })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::super::Vars;
    use super::*;

    #[test]
    fn defaults_env_overrides_and_bad_values() {
        let none = Vars(HashMap::new());
        let d = resolve_telegram(RawTelegram::default(), &none, &[]).unwrap();
        assert_eq!(d.api_base, DEFAULT_API_BASE);
        assert!(d.allowed_chat_ids.is_empty() && d.token.is_none());
        let raw = RawTelegram {
            allowed_chat_ids: Some(vec![42, -100]),
            api_base: Some("https://tg.example/".into()),
            ..RawTelegram::default()
        };
        let file = resolve_telegram(raw.clone(), &none, &[]).unwrap();
        assert_eq!(file.api_base, "https://tg.example");
        assert_eq!(file.allowed_user_ids, [42], "default: the private chats' users");
        let env = Vars(HashMap::from([
            ("TELEGRAM_API_BASE", "http://127.0.0.1:9"),
            ("TELEGRAM_BOT_TOKEN", "1:secret"),
        ]));
        let both = resolve_telegram(raw, &env, &[]).unwrap();
        assert_eq!(both.api_base, "http://127.0.0.1:9");
        assert_eq!(format!("{:?}", both.token), "Some(BotToken(***))");
        assert!(!serde_json::to_string(&both).unwrap().contains("secret"));
        let zero = RawTelegram { allowed_chat_ids: Some(vec![0]), ..RawTelegram::default() };
        assert!(
            resolve_telegram(zero, &none, &[])
                .unwrap_err()
                .to_string()
                .contains("allowed_chat_ids")
        );
        let ftp = RawTelegram { api_base: Some("ftp://x".into()), ..RawTelegram::default() };
        assert!(resolve_telegram(ftp, &none, &[]).unwrap_err().to_string().contains("api_base"));
    }

    #[test]
    fn the_inbox_must_be_inside_a_root() {
        let none = Vars(HashMap::new());
        let roots = [PathBuf::from("/home/u/project"), PathBuf::from("/home/u/notes")];
        let inbox = |text: &str| {
            let raw = RawTelegram { inbox: Some(text.into()), ..RawTelegram::default() };
            resolve_telegram(raw, &none, &roots).map(|t| t.inbox.unwrap())
        };
        assert_eq!(inbox("tg").unwrap(), PathBuf::from("/home/u/project/tg"));
        assert_eq!(inbox("/home/u/notes/in").unwrap(), PathBuf::from("/home/u/notes/in"));
        for bad in [
            "/tmp/in",
            "../outside",
            "/home/u/project",
            "/home/u/project/.git/x",
            "/home/u/projectx/in",
        ] {
            let e = inbox(bad).unwrap_err().to_string();
            assert!(
                e.contains("[telegram] inbox") && e.contains("inside one of the roots"),
                "{bad}: {e}"
            );
        }
    }
}
