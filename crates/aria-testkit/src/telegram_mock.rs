//! A fake Telegram Bot API on a loopback port, for the Telegram channel's tests.
//!
//! [`FakeTelegram`] answers `POST /bot{TOKEN}/{method}` (JSON bodies) the way the official Bot
//! API documents: `{"ok": true, "result": …}` or `{"ok": false, "error_code", "description",
//! "parameters": {"retry_after"}}`. It implements `getMe`, `getUpdates` (long polling that
//! honours `offset`, `limit` and `timeout`; an `offset` confirms every earlier update, which is
//! then forgotten, as on Telegram), `sendMessage`, `sendDocument`, `editMessageText`, `answerCallbackQuery`,
//! `sendChatAction`, `setMyCommands` and `getFile`. It keeps the text of every message the bot
//! sent (edits applied) and of every document it uploaded (`sendDocument`, multipart), checks `parse_mode: "HTML"` markup as Telegram does (unknown tags,
//! unbalanced tags and bare `&` or `<` are "can't parse entities") and refuses texts over 4,096
//! characters and edits that change nothing ("message is not modified").
//!
//! Tests push updates ([`FakeTelegram::push_message`], [`FakeTelegram::push_callback`]), read
//! every request back ([`FakeTelegram::requests`]) and script failures for the next requests
//! of a method ([`FakeTelegram::fail_next`]): 429 with `retry_after`, any status, a connection
//! dropped before or after the request took effect, a delay. Like the model mocks, the server
//! runs on its own thread and runtime, so dropping it closes every connection at once.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// A scripted failure for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// `429 Too Many Requests: retry after N`, with `parameters.retry_after`.
    TooManyRequests { retry_after: u64 },
    /// This HTTP status with a Bot API error body (e.g. 502), nothing done.
    Status(u16),
    /// `400 Bad Request` with this description, nothing done.
    BadRequest(String),
    /// The connection is cut without an answer; when `delivered`, the request took effect first
    /// (the message exists, the client just never hears so).
    Drop { delivered: bool },
    /// Waits this long, then answers normally.
    Delay(Duration),
}

/// One request as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: String,
    pub body: Value,
    /// Whether a scripted fault answered it.
    pub faulted: bool,
}

#[derive(Debug, Default)]
struct World {
    next_update_id: i64,
    next_message_id: i64,
    next_callback: u64,
    /// Updates not yet confirmed, in order.
    updates: VecDeque<Value>,
    requests: Vec<Request>,
    faults: Vec<(String, Fault)>,
    /// The bot's messages: (chat, message id) → current text.
    messages: BTreeMap<(i64, i64), String>,
    commands: Vec<Value>,
    /// Files the bot can fetch, by file id.
    files: BTreeMap<String, Vec<u8>>,
    /// Documents the bot sent: (chat, message id, file name, content).
    documents: Vec<(i64, i64, String, String)>,
}

#[derive(Debug)]
struct Shared {
    token: String,
    world: Mutex<World>,
    /// Woken when an update is pushed or a request is recorded.
    changed: Notify,
}

impl Shared {
    fn world(&self) -> MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running fake Bot API. Dropping it shuts it down.
#[derive(Debug)]
pub struct FakeTelegram {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _server: crate::mock::Loopback,
}

/// The bot's own user id (`getMe`).
pub const BOT_ID: i64 = 7_000_000_001;

impl FakeTelegram {
    /// Starts a fake that accepts `token`. Panics when no loopback port can be bound (a test
    /// cannot go on without it).
    pub fn start(token: &str) -> FakeTelegram {
        match FakeTelegram::try_start(token) {
            Ok(t) => t,
            Err(e) => panic!("fake Telegram: cannot start a loopback server: {e}"),
        }
    }

    pub fn try_start(token: &str) -> std::io::Result<FakeTelegram> {
        let shared = Arc::new(Shared {
            token: token.to_owned(),
            world: Mutex::new(World {
                next_update_id: 1000,
                next_message_id: 1,
                ..World::default()
            }),
            changed: Notify::new(),
        });
        let app = Router::new()
            .route("/{bot}/{method}", post(handle))
            .route("/file/{bot}/files/{id}", axum::routing::get(download))
            .fallback(|| async { error(StatusCode::NOT_FOUND, "Not Found", None) })
            .with_state(Arc::clone(&shared));
        let server = crate::mock::Loopback::serve("telegram-fake", app)?;
        Ok(FakeTelegram { addr: server.addr, shared, _server: server })
    }

    /// What `TELEGRAM_API_BASE` should be, e.g. `http://127.0.0.1:40123`.
    pub fn api_base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues an update (an `update_id` is assigned) and returns its id.
    pub fn push_update(&self, mut update: Value) -> i64 {
        let id = {
            let mut w = self.shared.world();
            w.next_update_id += 1;
            let id = w.next_update_id;
            if let Some(map) = update.as_object_mut() {
                map.insert("update_id".into(), json!(id));
            }
            w.updates.push_back(update);
            id
        };
        self.shared.changed.notify_waiters();
        id
    }

    /// A text message from user `from` in chat `chat` (a negative chat id is a group).
    pub fn push_message(&self, chat: i64, from: i64, text: &str) -> i64 {
        let message_id = {
            let mut w = self.shared.world();
            w.next_message_id += 1;
            w.next_message_id
        };
        self.push_update(json!({
            "message": {
                "message_id": message_id,
                "from": {"id": from, "is_bot": false, "first_name": "Tester"},
                "chat": chat_object(chat),
                "date": 1_735_689_600,
                "text": text,
            }
        }))
    }

    /// A file the bot can fetch with `getFile` and download; returns its file id.
    pub fn add_file(&self, bytes: &[u8]) -> String {
        let mut w = self.shared.world();
        let id = format!("file{}", w.files.len() + 1);
        w.files.insert(id.clone(), bytes.to_vec());
        id
    }

    /// A message carrying a document, a photo or a voice note (`kind`: `document`, `photo`,
    /// `voice`) with the file `file_id`, `name` (documents) and an optional caption.
    pub fn push_file(
        &self,
        chat: i64,
        from: i64,
        kind: &str,
        file_id: &str,
        name: &str,
        caption: Option<&str>,
    ) -> i64 {
        let size = self.shared.world().files.get(file_id).map_or(0, Vec::len);
        let file = json!({"file_id": file_id, "file_unique_id": file_id, "file_size": size});
        let mut message = json!({
            "message_id": 0,
            "from": {"id": from, "is_bot": false, "first_name": "Tester"},
            "chat": chat_object(chat),
            "date": 1_735_689_600,
        });
        match kind {
            "photo" => message["photo"] = json!([file.clone(), file]),
            "voice" => {
                message["voice"] = file;
                message["voice"]["mime_type"] = json!("audio/ogg");
                message["voice"]["duration"] = json!(3);
            }
            _ => {
                message["document"] = file;
                message["document"]["file_name"] = json!(name);
                message["document"]["mime_type"] = json!("text/plain");
            }
        }
        if let Some(caption) = caption {
            message["caption"] = json!(caption);
        }
        {
            let mut w = self.shared.world();
            w.next_message_id += 1;
            message["message_id"] = json!(w.next_message_id);
        }
        self.push_update(json!({"message": message}))
    }

    /// A press on an inline button of the bot's message `message_id` in `chat`.
    pub fn push_callback(&self, chat: i64, from: i64, message_id: i64, data: &str) -> i64 {
        let id = {
            let mut w = self.shared.world();
            w.next_callback += 1;
            format!("cb{}", w.next_callback)
        };
        let text = self.text_of(chat, message_id).unwrap_or_default();
        self.push_update(json!({
            "callback_query": {
                "id": id,
                "from": {"id": from, "is_bot": false, "first_name": "Tester"},
                "message": {"message_id": message_id, "chat": chat_object(chat), "date": 1_735_689_600, "text": text},
                "chat_instance": "1",
                "data": data,
            }
        }))
    }

    /// The next `count` requests of `method` fail with `fault`, in order with faults queued
    /// before.
    pub fn fail_next(&self, method: &str, fault: Fault, count: usize) {
        let mut w = self.shared.world();
        for _ in 0..count {
            w.faults.push((method.to_owned(), fault.clone()));
        }
    }

    /// Every request received, in order (a body that is not JSON is recorded as a string).
    pub fn requests(&self) -> Vec<Request> {
        self.shared.world().requests.clone()
    }

    /// The bodies of the requests of one method, in order.
    pub fn calls(&self, method: &str) -> Vec<Value> {
        self.shared
            .world()
            .requests
            .iter()
            .filter(|r| r.method == method)
            .map(|r| r.body.clone())
            .collect()
    }

    /// The bot's messages in a chat as (message id, current text), oldest first.
    pub fn messages(&self, chat: i64) -> Vec<(i64, String)> {
        self.shared
            .world()
            .messages
            .iter()
            .filter(|((c, _), _)| *c == chat)
            .map(|((_, id), text)| (*id, text.clone()))
            .collect()
    }

    /// The documents the bot sent to a chat: (message id, file name, content), oldest first.
    pub fn documents(&self, chat: i64) -> Vec<(i64, String, String)> {
        self.shared
            .world()
            .documents
            .iter()
            .filter(|d| d.0 == chat)
            .map(|(_, id, name, content)| (*id, name.clone(), content.clone()))
            .collect()
    }

    /// The current text of one of the bot's messages.
    pub fn text_of(&self, chat: i64, message_id: i64) -> Option<String> {
        self.shared.world().messages.get(&(chat, message_id)).cloned()
    }

    /// Updates pushed and not yet confirmed by a later `offset`.
    pub fn unconfirmed(&self) -> usize {
        self.shared.world().updates.len()
    }

    /// The commands the bot registered with `setMyCommands` (the last call).
    pub fn commands(&self) -> Vec<Value> {
        self.shared.world().commands.clone()
    }

    /// Waits until `check` holds for this fake (re-checked after each request); false when
    /// `timeout` passed first.
    pub async fn wait_until(
        &self,
        timeout: Duration,
        check: impl Fn(&FakeTelegram) -> bool,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.shared.changed.notified();
            if check(self) {
                return true;
            }
            let tick = tokio::time::Instant::now() + Duration::from_millis(50);
            if tokio::time::timeout_at(deadline.min(tick), changed).await.is_err()
                && tokio::time::Instant::now() >= deadline
            {
                return check(self);
            }
        }
    }

    /// [`FakeTelegram::wait_until`] for tests without a runtime (polls every 10 ms).
    pub fn wait_until_blocking(
        &self,
        timeout: Duration,
        check: impl Fn(&FakeTelegram) -> bool,
    ) -> bool {
        let deadline = Instant::now() + timeout;
        while !check(self) {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// Stops the server and closes every connection. Also done on drop.
    pub fn shutdown(self) {}
}

fn chat_object(chat: i64) -> Value {
    if chat < 0 {
        json!({"id": chat, "type": "group", "title": "A group"})
    } else {
        json!({"id": chat, "type": "private", "first_name": "Tester"})
    }
}

fn reply(status: StatusCode, body: &Value) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_default()
}

fn ok(result: Value) -> Response {
    reply(StatusCode::OK, &json!({"ok": true, "result": result}))
}

fn error(status: StatusCode, description: &str, retry_after: Option<u64>) -> Response {
    let mut body = json!({"ok": false, "error_code": status.as_u16(), "description": description});
    if let Some(seconds) = retry_after {
        body["parameters"] = json!({"retry_after": seconds});
    }
    reply(status, &body)
}

fn bad_request(description: &str) -> Response {
    error(StatusCode::BAD_REQUEST, &format!("Bad Request: {description}"), None)
}

/// `GET /file/bot{TOKEN}/files/{id}`: a file's bytes, as Telegram serves them after `getFile`.
async fn download(
    State(shared): State<Arc<Shared>>,
    Path((bot, id)): Path<(String, String)>,
) -> Response {
    if bot.strip_prefix("bot") != Some(shared.token.as_str()) {
        return error(StatusCode::UNAUTHORIZED, "Unauthorized", None);
    }
    let bytes = shared.world().files.get(&id).cloned();
    shared.world().requests.push(Request {
        method: "file".into(),
        body: Value::String(id),
        faulted: false,
    });
    shared.changed.notify_waiters();
    match bytes {
        Some(bytes) => Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "application/octet-stream")
            .body(Body::from(bytes))
            .unwrap_or_default(),
        None => error(StatusCode::NOT_FOUND, "Not Found", None),
    }
}

/// A response whose body fails at once: the client gets headers and then a cut connection.
fn dropped() -> Response {
    let failing = futures::stream::once(async {
        Err::<Bytes, std::io::Error>(std::io::Error::other("fake Telegram: connection dropped"))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, "64")
        .body(Body::from_stream(failing))
        .unwrap_or_default()
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    Path((bot, method)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    if bot.strip_prefix("bot") != Some(shared.token.as_str()) {
        return error(StatusCode::UNAUTHORIZED, "Unauthorized", None);
    }
    let body: Value = serde_json::from_slice(&body)
        .ok()
        .or_else(|| parse_multipart(&body))
        .unwrap_or_else(|| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let fault = {
        let mut w = shared.world();
        let fault = w.faults.iter().position(|(m, _)| *m == method).map(|i| w.faults.remove(i).1);
        w.requests.push(Request {
            method: method.clone(),
            body: body.clone(),
            faulted: fault.as_ref().is_some_and(|f| !matches!(f, Fault::Delay(_))),
        });
        fault
    };
    shared.changed.notify_waiters();
    match fault {
        Some(Fault::TooManyRequests { retry_after }) => {
            return error(
                StatusCode::TOO_MANY_REQUESTS,
                &format!("Too Many Requests: retry after {retry_after}"),
                Some(retry_after),
            );
        }
        Some(Fault::Status(code)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_GATEWAY);
            return error(status, status.canonical_reason().unwrap_or("error"), None);
        }
        Some(Fault::BadRequest(description)) => return bad_request(&description),
        Some(Fault::Drop { delivered: false }) => return dropped(),
        Some(Fault::Drop { delivered: true }) => {
            let _ = perform(&shared, &method, &body).await;
            return dropped();
        }
        Some(Fault::Delay(delay)) => tokio::time::sleep(delay).await,
        None => {}
    }
    perform(&shared, &method, &body).await
}

async fn perform(shared: &Arc<Shared>, method: &str, body: &Value) -> Response {
    match method {
        "getMe" => ok(
            json!({"id": BOT_ID, "is_bot": true, "first_name": "ARIA", "username": "aria_test_bot"}),
        ),
        "getUpdates" => get_updates(shared, body).await,
        "sendMessage" => send_message(shared, body),
        "editMessageText" => edit_message(shared, body),
        "sendDocument" => send_document(shared, body),
        "answerCallbackQuery" | "sendChatAction" => ok(json!(true)),
        "setMyCommands" => {
            shared.world().commands =
                body.get("commands").and_then(Value::as_array).cloned().unwrap_or_default();
            ok(json!(true))
        }
        "getFile" => match body.get("file_id").and_then(Value::as_str) {
            Some(id) => match shared.world().files.get(id).map(Vec::len) {
                Some(size) => ok(json!({"file_id": id, "file_unique_id": id,
                    "file_size": size, "file_path": format!("files/{id}")})),
                None => bad_request("invalid file_id"),
            },
            None => bad_request("file_id is empty"),
        },
        _ => error(StatusCode::NOT_FOUND, "Not Found: method not found", None),
    }
}

async fn get_updates(shared: &Arc<Shared>, body: &Value) -> Response {
    let offset = body.get("offset").and_then(Value::as_i64);
    let limit = body.get("limit").and_then(Value::as_u64).unwrap_or(100).clamp(1, 100);
    let timeout = body.get("timeout").and_then(Value::as_u64).unwrap_or(0).min(50);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    loop {
        let changed = shared.changed.notified();
        let batch: Vec<Value> = {
            let mut w = shared.world();
            if let Some(offset) = offset {
                // Telegram forgets every update before the offset once it is asked for.
                w.updates.retain(|u| u["update_id"].as_i64().is_some_and(|id| id >= offset));
            }
            w.updates.iter().take(usize::try_from(limit).unwrap_or(100)).cloned().collect()
        };
        if !batch.is_empty() {
            return ok(Value::Array(batch));
        }
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            return ok(json!([]));
        }
    }
}

/// The chat and the text Telegram would show, or the description of a 400.
fn text_param(body: &Value) -> Result<(i64, String), String> {
    let chat = body.get("chat_id").and_then(Value::as_i64).ok_or("chat_id is empty")?;
    let text = body.get("text").and_then(Value::as_str).unwrap_or_default();
    if text.trim().is_empty() {
        return Err("message text is empty".into());
    }
    let shown = if body.get("parse_mode").and_then(Value::as_str) == Some("HTML") {
        parse_html(text).map_err(|e| format!("can't parse entities: {e}"))?
    } else {
        text.to_owned()
    };
    if shown.encode_utf16().count() > 4096 {
        return Err("message is too long".into());
    }
    Ok((chat, shown))
}

fn send_message(shared: &Arc<Shared>, body: &Value) -> Response {
    let (chat, text) = match text_param(body) {
        Ok(v) => v,
        Err(e) => return bad_request(&e),
    };
    let id = {
        let mut w = shared.world();
        w.next_message_id += 1;
        let id = w.next_message_id;
        w.messages.insert((chat, id), text.clone());
        id
    };
    ok(json!({"message_id": id, "chat": chat_object(chat), "date": 1_735_689_600, "text": text}))
}

/// A multipart/form-data body as JSON: each text field by its name, a file part as
/// `{"filename", "content"}` (its bytes as UTF-8, lossily). `None` when it is not one.
pub fn parse_multipart(raw: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(raw);
    let first = text.split("\r\n").next()?;
    let boundary = first.strip_prefix("--")?;
    if boundary.is_empty() {
        return None;
    }
    let mut out = serde_json::Map::new();
    for part in text.split(&format!("--{boundary}")).skip(1) {
        if part.starts_with("--") {
            break;
        }
        let part = part.strip_prefix("\r\n")?;
        let (headers, value) = part.split_once("\r\n\r\n")?;
        let value = value.strip_suffix("\r\n").unwrap_or(value);
        let attribute = |name: &str| {
            let start = headers.find(&format!("{name}=\""))? + name.len() + 2;
            let end = headers[start..].find('"')? + start;
            Some(headers[start..end].to_owned())
        };
        let name = attribute("name")?;
        let field = match attribute("filename") {
            Some(filename) => json!({"filename": filename, "content": value}),
            None => serde_json::from_str::<i64>(value)
                .map_or_else(|_| Value::String(value.to_owned()), Value::from),
        };
        out.insert(name, field);
    }
    Some(Value::Object(out))
}

/// An uploaded text file: kept with the bot's messages (shown as `📄 NAME` and its caption)
/// and whole in [`FakeTelegram::documents`].
fn send_document(shared: &Arc<Shared>, body: &Value) -> Response {
    let Some(chat) = body.get("chat_id").and_then(Value::as_i64) else {
        return bad_request("chat_id is empty");
    };
    let Some(filename) = body.pointer("/document/filename").and_then(Value::as_str) else {
        return bad_request("there is no document in the request");
    };
    let content = body.pointer("/document/content").and_then(Value::as_str).unwrap_or_default();
    let caption = body.get("caption").and_then(Value::as_str).unwrap_or_default();
    if caption.encode_utf16().count() > 1024 {
        return bad_request("message caption is too long");
    }
    let id = {
        let mut w = shared.world();
        w.next_message_id += 1;
        let id = w.next_message_id;
        w.messages.insert((chat, id), format!("📄 {filename}\n{caption}"));
        w.documents.push((chat, id, filename.to_owned(), content.to_owned()));
        id
    };
    ok(json!({"message_id": id, "chat": chat_object(chat), "date": 1_735_689_600,
        "document": {"file_name": filename, "file_id": format!("doc{id}")}, "caption": caption}))
}

fn edit_message(shared: &Arc<Shared>, body: &Value) -> Response {
    let (chat, text) = match text_param(body) {
        Ok(v) => v,
        Err(e) => return bad_request(&e),
    };
    let Some(id) = body.get("message_id").and_then(Value::as_i64) else {
        return bad_request("message identifier is not specified");
    };
    let mut w = shared.world();
    match w.messages.get_mut(&(chat, id)) {
        None => bad_request("message to edit not found"),
        Some(current) if *current == text && body.get("reply_markup").is_none() => bad_request(
            "message is not modified: specified new message content and reply markup are exactly \
             the same as a current content and reply markup of the message",
        ),
        Some(current) => {
            current.clone_from(&text);
            ok(
                json!({"message_id": id, "chat": chat_object(chat), "date": 1_735_689_600, "text": text}),
            )
        }
    }
}

/// The text Telegram would show for HTML markup, or why it cannot be parsed.
pub fn parse_html(text: &str) -> Result<String, String> {
    const TAGS: [&str; 12] =
        ["b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "code", "pre", "a"];
    let mut out = String::with_capacity(text.len());
    let mut open: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        match c {
            '<' => {
                let end = rest.find('>').ok_or("unclosed start tag")?;
                let inner = &rest[1..end];
                let (closing, inner) = match inner.strip_prefix('/') {
                    Some(name) => (true, name),
                    None => (false, inner),
                };
                let name = inner.split_whitespace().next().unwrap_or_default().to_ascii_lowercase();
                if !TAGS.contains(&name.as_str()) && name != "tg-spoiler" && name != "blockquote" {
                    return Err(format!("unsupported start tag \"{name}\""));
                }
                if closing {
                    if open.pop().as_deref() != Some(name.as_str()) {
                        return Err(format!("unmatched end tag \"{name}\""));
                    }
                } else {
                    open.push(name);
                }
                rest = &rest[end + 1..];
            }
            '&' => {
                let end = rest.find(';').ok_or("unclosed entity")?;
                let entity = &rest[1..end];
                out.push(match entity {
                    "lt" => '<',
                    "gt" => '>',
                    "amp" => '&',
                    "quot" => '"',
                    _ => return Err(format!("unsupported entity \"{entity}\"")),
                });
                rest = &rest[end + 1..];
            }
            _ => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if let Some(name) = open.pop() {
        return Err(format!("can't find end tag corresponding to start tag \"{name}\""));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
