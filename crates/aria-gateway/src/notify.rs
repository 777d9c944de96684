//! One notifier for every channel: a scheduled job started, completed, failed, was
//! skipped, timed out or was interrupted; a heartbeat.
//!
//! Every notification is recorded in the store first (the web UI's list,
//! `GET /api/v1/notifications`), then pushed: to the web (an event to each open
//! `GET /api/v1/notifications/events` stream and WebSocket), to each allowlisted Telegram chat
//! that did not say `/notify off` (through the outbox, so nothing is lost), and as a desktop
//! notification when `notify-send` exists. `[notify] enabled = false` stops the Telegram and
//! desktop pushes but keeps the records and the web list. A run's start is only recorded and
//! pushed when `[notify] job_started` asks for it. The text passes the secret filter first
//! (the store's redactor), once, for every one of those ways out.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use aria_scheduler::scheduler::{Notice, NoticeKind, Notifier, Scheduler};
use aria_store::{Store, StoredNotification};
use tokio::sync::broadcast;

/// `[notify]`, resolved.
#[derive(Debug, Clone)]
pub struct NotifySettings {
    /// Push to Telegram and the desktop (records are always kept).
    pub enabled: bool,
    /// Also tell when a job starts.
    pub job_started: bool,
    /// The `notify-send` to run for desktop notifications; `None`: none.
    pub desktop: Option<PathBuf>,
}

impl Default for NotifySettings {
    fn default() -> Self {
        NotifySettings { enabled: true, job_started: false, desktop: None }
    }
}

impl NotifySettings {
    /// `notify-send` where programs are looked for, if it is there and a graphical session
    /// shows it.
    pub fn find_desktop() -> Option<PathBuf> {
        if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
            return None;
        }
        aria_tools::profiles::find_program("notify-send")
    }
}

/// Something a notification can be pushed to besides the web and the desktop (the Telegram
/// channel). Returns whether it was queued for anyone.
pub trait Push: Send + Sync + std::fmt::Debug {
    fn name(&self) -> &'static str;
    fn push(&self, text: &str) -> bool;
    /// Asks an approval question that no conversation asked (`id`, `tool`, `tier`,
    /// `arguments`, `reason`) with a way to answer it (Telegram: Approve / Deny buttons).
    /// `false`: this channel cannot, and gets the notification's `text` instead.
    fn ask(&self, _question: &serde_json::Value, _text: &str) -> bool {
        false
    }
    /// The question `id` was settled (`status`: approved, denied, expired).
    fn settle(&self, _result: &serde_json::Value) {}
}

/// The notifier. Shared by the scheduler, the HTTP API and the Telegram commands.
#[derive(Debug)]
pub struct Notifications {
    store: Arc<Store>,
    settings: NotifySettings,
    web: broadcast::Sender<StoredNotification>,
    channels: Mutex<Vec<Weak<dyn Push>>>,
    /// The daemon's scheduler, once it runs (for "run now" from the API and Telegram, and the
    /// last tick on `/status`).
    scheduler: OnceLock<Weak<Scheduler>>,
    /// When the daemon started, for the heartbeat's uptime.
    started: OnceLock<std::time::Instant>,
}

impl Notifications {
    pub fn new(store: Arc<Store>, settings: NotifySettings) -> Self {
        let (web, _) = broadcast::channel(64);
        let started = OnceLock::new();
        let _ = started.set(std::time::Instant::now());
        Notifications {
            store,
            settings,
            web,
            channels: Mutex::default(),
            scheduler: OnceLock::new(),
            started,
        }
    }

    pub fn settings(&self) -> &NotifySettings {
        &self.settings
    }

    /// Adds a channel to push to (held weakly: a stopped channel is skipped).
    pub fn attach(&self, channel: Weak<dyn Push>) {
        self.channels.lock().unwrap_or_else(PoisonError::into_inner).push(channel);
    }

    /// New notifications, as they are recorded.
    pub fn subscribe(&self) -> broadcast::Receiver<StoredNotification> {
        self.web.subscribe()
    }

    /// How long this daemon has run.
    pub fn uptime(&self) -> std::time::Duration {
        self.started.get().map(std::time::Instant::elapsed).unwrap_or_default()
    }

    /// Makes the daemon's scheduler reachable from the front ends (once).
    pub fn set_scheduler(&self, scheduler: &Arc<Scheduler>) {
        let _ = self.scheduler.set(Arc::downgrade(scheduler));
    }

    /// The daemon's scheduler, while it runs.
    pub fn scheduler(&self) -> Option<Arc<Scheduler>> {
        self.scheduler.get().and_then(Weak::upgrade)
    }

    /// Records a notification and pushes it. `None` when it was not wanted (a start nobody
    /// asked to hear about) or could not be recorded (logged).
    pub fn publish(
        &self,
        kind: &str,
        job: Option<&str>,
        slot: Option<&str>,
        text: &str,
    ) -> Option<StoredNotification> {
        self.publish_with(kind, job, slot, text, None)
    }

    /// Records an approval question (kind `approval`) and asks it on every channel that can
    /// take an answer ([`Push::ask`]); the others get `text`.
    pub fn publish_question(
        &self,
        text: &str,
        question: &serde_json::Value,
    ) -> Option<StoredNotification> {
        self.publish_with("approval", None, None, text, Some(question))
    }

    /// Tells the channels that asked it that question `result["id"]` is settled.
    pub fn settled(&self, result: &serde_json::Value) {
        for channel in self.live_channels() {
            channel.settle(result);
        }
    }

    fn live_channels(&self) -> Vec<Arc<dyn Push>> {
        let mut list = self.channels.lock().unwrap_or_else(PoisonError::into_inner);
        list.retain(|c| c.strong_count() > 0);
        list.iter().filter_map(Weak::upgrade).collect()
    }

    fn publish_with(
        &self,
        kind: &str,
        job: Option<&str>,
        slot: Option<&str>,
        text: &str,
        question: Option<&serde_json::Value>,
    ) -> Option<StoredNotification> {
        if kind == NoticeKind::Started.as_str() && !self.settings.job_started {
            return None;
        }
        // The one way out for a notification: what the web, Telegram, the desktop and the
        // stored record get is the redacted text (a job's answer may quote a key).
        let text = &self.store.redact_text(text);
        tracing::info!(kind, job, slot, "{text}");
        let mut pushed = Vec::new();
        if self.settings.enabled {
            for channel in self.live_channels() {
                if question.is_some_and(|q| channel.ask(q, text)) || channel.push(text) {
                    pushed.push(channel.name().to_owned());
                }
            }
            if let Some(program) = &self.settings.desktop
                && desktop(program, job, text)
            {
                pushed.push("desktop".to_owned());
            }
        }
        pushed.push("web".to_owned());
        match self.store.notification_add(kind, job, slot, text, &pushed) {
            Ok(stored) => {
                let _ = self.web.send(stored.clone());
                Some(stored)
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot record a notification");
                None
            }
        }
    }
}

/// Runs `notify-send` (no shell; the text is one argument) and reaps it in the background.
fn desktop(program: &std::path::Path, job: Option<&str>, text: &str) -> bool {
    let title = job.map_or_else(|| "ARIA".to_owned(), |j| format!("ARIA: {j}"));
    let body: String = text.chars().take(1_000).collect();
    match std::process::Command::new(program)
        .args(["--app-name=ARIA", "--", &title, &body])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot run {}", program.display());
            false
        }
    }
}

impl Notifier for Notifications {
    fn notify(&self, notice: Notice) {
        self.publish(notice.kind.as_str(), Some(&notice.job), Some(&notice.slot), &notice.text);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use aria_api::NoRedact;

    use super::*;

    #[derive(Debug, Default)]
    struct Counting(AtomicUsize);

    impl Push for Counting {
        fn name(&self) -> &'static str {
            "telegram"
        }
        fn push(&self, _: &str) -> bool {
            self.0.fetch_add(1, Ordering::SeqCst);
            true
        }
    }

    fn rig(settings: NotifySettings) -> (Notifications, Arc<Counting>) {
        let store = Arc::new(Store::open_in_memory(Arc::new(NoRedact)).unwrap());
        let hub = Notifications::new(store, settings);
        let channel = Arc::new(Counting::default());
        let weak: Weak<dyn Push> = Arc::downgrade(&(channel.clone() as Arc<dyn Push>));
        hub.attach(weak);
        (hub, channel)
    }

    #[tokio::test]
    async fn records_pushes_and_streams_to_the_web() {
        let (hub, channel) = rig(NotifySettings::default());
        let mut web = hub.subscribe();
        let stored = hub.publish("completed", Some("j"), Some("s"), "done").unwrap();
        assert_eq!(stored.pushed, ["telegram", "web"]);
        assert_eq!(channel.0.load(Ordering::SeqCst), 1);
        assert_eq!(web.recv().await.unwrap(), stored);
        assert_eq!(hub.store.notifications(10, None).unwrap(), [stored]);
    }

    #[test]
    fn off_keeps_the_record_and_pushes_nothing() {
        let (hub, channel) = rig(NotifySettings { enabled: false, ..NotifySettings::default() });
        let stored = hub.publish("failed", Some("j"), None, "broke").unwrap();
        assert_eq!(stored.pushed, ["web"]);
        assert_eq!(channel.0.load(Ordering::SeqCst), 0);
        assert_eq!(hub.store.notifications(10, None).unwrap().len(), 1);
    }

    #[test]
    fn a_start_is_told_only_when_asked_for() {
        let (hub, channel) = rig(NotifySettings::default());
        assert!(hub.publish("started", Some("j"), None, "started").is_none());
        assert_eq!(channel.0.load(Ordering::SeqCst), 0);
        assert!(hub.store.notifications(10, None).unwrap().is_empty());
        let (hub, _) = rig(NotifySettings { job_started: true, ..NotifySettings::default() });
        assert!(hub.publish("started", Some("j"), None, "started").is_some());
    }

    #[cfg(unix)]
    #[test]
    fn desktop_notifications_run_notify_send_with_the_text_as_one_argument() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("args");
        let program = dir.path().join("notify-send");
        std::fs::write(
            &program,
            format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > {}.tmp && mv {0}.tmp {0}\n", out.display()),
        )
        .unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (hub, _) = rig(NotifySettings { desktop: Some(program), ..NotifySettings::default() });
        let stored = hub.publish("completed", Some("digest"), None, "a; rm -rf / $(x)").unwrap();
        assert!(stored.pushed.contains(&"desktop".to_owned()));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !out.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let args = std::fs::read_to_string(&out).unwrap();
        assert_eq!(args, "--app-name=ARIA\n--\nARIA: digest\na; rm -rf / $(x)\n");
    }
}
