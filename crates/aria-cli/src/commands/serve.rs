//! `aria serve`: the daemon. One process owns the agent, the store and the models; the HTTP
//! API, the OpenAI-compatible endpoint and the web UI are its front ends (`aria-gateway`).
//! Every request needs a credential, on loopback too: the daemon's own token
//! (`$ARIA_HOME/api-token`, made on first start), a scoped token (`aria tokens`) or a web login
//! (the one-time link printed at start and by `aria ui`). It refuses a second instance on the
//! same `$ARIA_HOME`, refuses a non-loopback listener without `--insecure`, and stops gracefully on SIGINT/SIGTERM: no new runs, runs
//! in flight get `[server] shutdown_grace_secs` to finish and are then stopped where they are
//! (interrupted, resumable), background work is flushed, the database is closed. With
//! `TELEGRAM_BOT_TOKEN` set it also runs the Telegram channel (`commands/telegram.rs`).

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use aria_gateway::{Approvals, Gateway, Runs, Security, Services};
use aria_store::runlock::DaemonLock;
use tokio_util::sync::CancellationToken;

use super::run::Context;
use crate::app;
use crate::cli::{GlobalArgs, ServeArgs};
use crate::config::{self, Config};
use crate::exit::{CliError, CliResult, OK, USAGE};

/// Where `aria serve --new-token` keeps the token.
pub fn token_path(data_dir: &Path) -> PathBuf {
    data_dir.join("api-token")
}

fn usage(message: String) -> CliError {
    CliError { code: USAGE, error: anyhow!(message) }
}

pub fn serve(global: &GlobalArgs, args: ServeArgs) -> CliResult<u8> {
    let mut ctx = Context::load(global)?;
    if args.new_token {
        return new_token(&ctx.config.data_dir);
    }
    let listen = match &args.listen {
        Some(text) => config::parse_listen(text).map_err(|e| usage(format!("--listen: {e}")))?,
        None => ctx.config.server.listen,
    };
    if args.install {
        return install(&ctx.config, listen, &args, global);
    }
    let token = match ctx.config.server.auth {
        crate::config::ServerAuth::Token => Some(ensure_token(&ctx.config.data_dir)?),
        crate::config::ServerAuth::None if !args.insecure => {
            return Err(usage(format!(
                "[server] auth = \"none\" lets anything that can reach {listen} use ARIA \
                 without a credential — other accounts on this machine and sandboxed programs \
                 included; it is meant for a single-user container: add --insecure to accept \
                 that, or remove the setting"
            )));
        }
        crate::config::ServerAuth::None => None,
    };
    check_exposure(listen, token.is_some(), args.insecure)?;
    let _instance = DaemonLock::acquire(&ctx.config.data_dir, &listen.to_string())
        .map_err(|e| usage(e.to_string()))?;
    // Started from `/` or the home directory (systemd does), the daemon works in the
    // workspace rather than failing; started in a project, it works there.
    let origin = &ctx.config.roots_origin;
    let roots = &ctx.config.roots;
    if let Some(line) = origin.serve_fallback(roots).or_else(|| origin.announcement(roots)) {
        eprintln!("{line}");
    }
    app::settle_local_model(&mut ctx.config)?;
    let runtime = super::run::runtime()?;
    runtime.block_on(run_daemon(global.clone(), ctx, listen, token, args.open))
}

/// A non-loopback listener needs a token and an explicit `--insecure` (plain HTTP).
fn check_exposure(listen: SocketAddr, has_token: bool, insecure: bool) -> CliResult<()> {
    if listen.ip().is_loopback() {
        return Ok(());
    }
    let remote = "for remote access keep ARIA on loopback (--listen 127.0.0.1:8080) and put \
                  `tailscale serve 8080` or a Cloudflare Tunnel in front of it";
    if !has_token {
        return Err(usage(format!(
            "{listen} is not a loopback address, and anyone who can reach it could use ARIA: \
             create an API token first with `aria serve --new-token` (or set ARIA_API_TOKEN); \
             {remote}"
        )));
    }
    if !insecure {
        return Err(usage(format!(
            "{listen} is not a loopback address and ARIA speaks plain HTTP, so the API token \
             would cross the network unencrypted: add --insecure if that network is trusted; \
             {remote}"
        )));
    }
    Ok(())
}

/// The daemon's own token: [`api_token`], else a new one written to the token file (the first
/// start of a daemon).
fn ensure_token(data_dir: &Path) -> CliResult<String> {
    if let Some(token) = api_token(data_dir)? {
        return Ok(token);
    }
    let (token, path) = write_token(data_dir)?;
    eprintln!(
        "Made the daemon's API token: {} (mode 0600). Every request needs it or a web login; \
         the aria commands read it from there.",
        path.display()
    );
    Ok(token)
}

/// `ARIA_API_TOKEN`, else the token file; an unreadable or empty file is an error.
pub fn api_token(data_dir: &Path) -> CliResult<Option<String>> {
    if let Ok(token) = std::env::var("ARIA_API_TOKEN")
        && !token.trim().is_empty()
    {
        return Ok(Some(token.trim().to_owned()));
    }
    let path = token_path(data_dir);
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => Ok(Some(text.trim().to_owned())),
        Ok(_) => Err(usage(format!(
            "the API token file {} is empty; make a new token with `aria serve --new-token`",
            path.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CliError::failed(anyhow!("cannot read {}: {e}", path.display()))),
    }
}

/// A new random token, `aria_` and 64 hex digits.
pub fn random_token() -> CliResult<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map_err(|e| CliError::failed(anyhow!("cannot read random bytes: {e}")))?;
    Ok(format!("aria_{}", hex_encode(&bytes)))
}

/// Writes a new token to the token file (0600, replaced atomically): the token and the path.
fn write_token(data_dir: &Path) -> CliResult<(String, PathBuf)> {
    let token = random_token()?;
    let path = token_path(data_dir);
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options
        .open(&tmp)
        .and_then(|mut f| writeln!(f, "{token}").and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, &path));
    written.map_err(|e| CliError::failed(anyhow!("cannot write {}: {e}", path.display())))?;
    Ok((token, path))
}

fn new_token(data_dir: &Path) -> CliResult<u8> {
    let (token, path) = write_token(data_dir)?;
    println!("{token}");
    eprintln!(
        "A new API token is stored in {} (mode 0600); the old one, if any, no longer works. \
         Every request to `aria serve` now needs it: `Authorization: Bearer TOKEN`, or log in \
         on the web page. Restart a running daemon to apply it.",
        path.display()
    );
    Ok(OK)
}

fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `aria serve --install`: a systemd user unit.
fn install(
    config: &Config,
    listen: SocketAddr,
    args: &ServeArgs,
    global: &GlobalArgs,
) -> CliResult<u8> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::failed(anyhow!("cannot tell where the aria binary is: {e}")))?;
    let mut command = format!("{} serve --listen {listen}", exe.display());
    if args.insecure {
        command.push_str(" --insecure");
    }
    for root in &config.roots {
        command.push_str(&format!(" --root {}", systemd_quote(&root.display().to_string())));
    }
    if let Some(file) = &global.config {
        command.push_str(&format!(" --config {}", systemd_quote(&file.display().to_string())));
    }
    let grace = config.server.shutdown_grace_secs + 10;
    let environment = unit_environment(&config.data_dir, |name| std::env::var(name).ok());
    let unit = format!(
        "[Unit]\nDescription=ARIA, the local AI agent (aria serve)\nAfter=network.target\n\n\
         [Service]\nType=simple\nExecStart={command}\n{environment}\
         Restart=on-failure\nRestartSec=5\nKillSignal=SIGTERM\nTimeoutStopSec={grace}\n\n\
         [Install]\nWantedBy=default.target\n"
    );
    let dir = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .ok_or_else(|| CliError::failed(anyhow!("neither XDG_CONFIG_HOME nor HOME is set")))?
        .join("systemd/user");
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::failed(anyhow!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join("aria.service");
    let existed = path.exists();
    std::fs::write(&path, unit)
        .map_err(|e| CliError::failed(anyhow!("cannot write {}: {e}", path.display())))?;
    println!(
        "{} {}\nEnable and start it:\n  systemctl --user daemon-reload\n  systemctl --user enable \
         --now aria\nKeep it running after you log out:\n  loginctl enable-linger \"$USER\"\nIts \
         log: journalctl --user -u aria -f",
        if existed { "replaced" } else { "wrote" },
        path.display()
    );
    Ok(OK)
}

/// The model settings a shell passes with variables, which a systemd unit would not see: each
/// one set here becomes an `Environment=` line, so the daemon answers with the model the user
/// chose. Keys are not among them (a unit file is no place for secrets): ARIA reads them from
/// the `.env` in `$ARIA_HOME` or the config directory.
const UNIT_VARIABLES: &[&str] = &[
    "ARIA_PROVIDER",
    "ARIA_MODEL",
    "ARIA_FALLBACK",
    "ARIA_MODELS_DIR",
    "ARIA_ROOTS",
    "ARIA_CONFIG",
    "OLLAMA_HOST",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
];

/// The unit's `Environment=` lines: `ARIA_HOME` and the model settings of [`UNIT_VARIABLES`]
/// that `var` has.
fn unit_environment(data_dir: &Path, var: impl Fn(&str) -> Option<String>) -> String {
    let mut lines =
        format!("Environment=ARIA_HOME={}\n", systemd_quote(&data_dir.display().to_string()));
    for name in UNIT_VARIABLES {
        if let Some(value) = var(name).filter(|v| !v.trim().is_empty()) {
            lines.push_str(&format!("Environment={}\n", systemd_quote(&format!("{name}={value}"))));
        }
    }
    lines
}

/// A word for a systemd unit line (quoted when it has spaces or quotes).
fn systemd_quote(text: &str) -> String {
    if text.chars().all(|c| c.is_alphanumeric() || "/._-+=:,@".contains(c)) {
        text.to_owned()
    } else {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// The daemon's shared state: agent (with the approvals asked through the front ends), runs,
/// services and the notifier. `aria serve` puts front ends on it; `aria schedule run` runs a
/// job through it.
pub fn gateway(
    global: &GlobalArgs,
    config: &Config,
    store: &Arc<aria_store::Store>,
    redactor: &Arc<aria_tools::SecretRedactor>,
    security: Security,
) -> CliResult<Arc<Gateway>> {
    let notify = crate::scheduled::notify_settings(config);
    let notifications = Arc::new(aria_gateway::notify::Notifications::new(store.clone(), notify));
    let hub = notifications.clone();
    crate::search::send_alerts_to(Arc::new(move |text: &str| {
        hub.publish(crate::search::ALERT_KIND, None, None, text);
    }));
    let runs = Arc::new(Runs::new());
    let approvals = Approvals::new(store.clone(), runs.clone(), config.approval_timeout);
    // `ask_user`: its questions go to the chat front end that attaches itself (Telegram).
    let choices = Arc::new(aria_gateway::choices::Choices::default());
    let ask_user: Arc<dyn aria_api::Tool> =
        Arc::new(aria_gateway::choices::AskUser::new(choices.clone()));
    let parts = app::agent_parts(
        config,
        store.clone(),
        redactor.clone(),
        Some(Arc::new(approvals.clone())),
        false,
        vec![ask_user],
    )?;
    let mut config_json = serde_json::to_value(config).unwrap_or_default();
    aria_api::redact_json(redactor.as_ref(), &mut config_json);
    let pass_config = config.clone();
    let detached = aria_gateway::Detached::new(approvals.clone(), notifications.clone());
    let mcp = app::tool_gate(
        config,
        store,
        redactor.clone(),
        Some(Arc::new(detached)),
        Some(parts.memory.clone()),
    )?;
    let listed = config.clone();
    let services = Services {
        mcp: Some(Arc::new(mcp)),
        mcp_servers: Some(Arc::new(move || crate::mcp::server_rows(&listed))),
        agents: Some(Arc::new(crate::agents_book::Book {
            config: config.clone(),
            store: store.clone(),
        })),
        agent_for: Some(crate::agents::daemon_agents(
            global,
            config,
            store,
            redactor,
            approvals.clone(),
            choices.clone(),
        )),
        // The user's view of memory (web, API, Telegram /memory): every memory, whichever
        // agent keeps it.
        memory: Some(Arc::new(crate::memory::StoreMemory::new(
            store.clone(),
            parts.embedder.clone(),
        ))),
        embedder: parts.embedder,
        snapshots: Some(Arc::new(app::snapshots(config)?)),
        config: config_json,
        provider: Some((parts.provider, config.provider.model.clone())),
        pass_through: Some(Arc::new(move |backend: &str, model: &str| {
            if !matches!(backend, "ollama" | "openai" | "anthropic") {
                return Err(format!(
                    "no backend `{backend}`: name ollama, openai or anthropic (BACKEND/MODEL), \
                     or use the model `aria`"
                ));
            }
            crate::providers::backend(&pass_config, backend, model)
                .map(|b| b.provider())
                .map_err(|e| format!("{:#}", e.error))
        })),
        choices: Some(choices),
    };
    Ok(Arc::new(Gateway {
        notifications,
        status: Default::default(),
        agent: Arc::new(parts.agent),
        store: store.clone(),
        runs,
        approvals,
        data_dir: config.data_dir.clone(),
        services,
        security,
        shutdown: CancellationToken::new(),
    }))
}

async fn run_daemon(
    global: GlobalArgs,
    ctx: Context,
    listen: SocketAddr,
    token: Option<String>,
    open: bool,
) -> CliResult<u8> {
    // Runs that died without finishing (a crash, kill -9), as every command reports them.
    ctx.report_interrupted();
    close_interrupted_calls(&ctx);
    let Context { config, store, redactor } = ctx;
    for a in store.approvals_interrupt_pending()? {
        eprintln!(
            "note: the approval question for {} in session {} was still open when the daemon \
             stopped; it counts as denied",
            a.tool, a.session_id
        );
    }
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| {
        usage(format!(
            "cannot listen on {listen}: {e}; pick another address with --listen ADDR:PORT"
        ))
    })?;
    let address = listener.local_addr().unwrap_or(listen);
    let scoped = store.clone();
    let security = Security::new(
        token,
        listen.ip().is_loopback(),
        config.server.allowed_origins.clone(),
        config.server.rate_limit_per_minute,
    )
    .with_session_idle(Duration::from_secs(config.server.session_idle_days * 24 * 3600))
    .with_tokens(Arc::new(move |given: &str| {
        let found = scoped.token_lookup(given).ok().flatten()?;
        Some((found.name, aria_gateway::security::Scope::parse(&found.scope)?))
    }));
    let gateway = gateway(&global, &config, &store, &redactor, security)?;
    let runs = gateway.runs.clone();
    // Where other `aria` commands find this daemon (`aria memories search` asks it).
    let from_env = std::env::var("ARIA_API_TOKEN").is_ok_and(|t| !t.trim().is_empty());
    let token_file = token_path(&config.data_dir);
    let token_file =
        (gateway.security.token.is_some() && !from_env).then_some(token_file.as_path());
    if let Err(e) = crate::daemon_client::write(&config.data_dir, address, token_file) {
        eprintln!("warning: cannot write {}/serve.json: {e}", config.data_dir.display());
    }
    eprintln!(
        "ARIA is serving on http://{address}/ (web UI), API under http://{address}/api/v1 \
         ({}); model {} ({}). Ctrl-C stops it.",
        if gateway.security.token.is_some() {
            "every request needs a credential"
        } else {
            "NO credentials asked: [server] auth = \"none\""
        },
        config.provider.model,
        config.provider.name,
    );
    if let Some(code) = gateway.security.issue_login_code() {
        let url = format!("http://{address}/login?code={code}");
        eprintln!(
            "Open the web UI (this link logs it in once, within 10 minutes; `aria ui` prints a \
             new one): {url}"
        );
        if open {
            open_browser(&url);
        }
    }
    let mut telegram = super::telegram::start(&config.telegram, &gateway);
    let scheduler_stop = CancellationToken::new();
    let scheduler = start_scheduler(&gateway, &config, &scheduler_stop);
    let status = tokio::spawn(tracing::Instrument::instrument(
        aria_gateway::status::run(
            gateway.clone(),
            Duration::from_secs(config.server.status_interval_secs),
            scheduler_stop.clone(),
            aria_sandbox::release_unused_memory,
        ),
        tracing::info_span!("status"),
    ));
    let otlp = start_otlp(&gateway, &scheduler_stop);
    let retention =
        crate::retention::start(config.traces, gateway.store.clone(), scheduler_stop.clone());
    let stop = CancellationToken::new();
    let server = {
        let stop = stop.clone();
        tokio::spawn(aria_gateway::serve(listener, gateway.clone(), async move {
            stop.cancelled().await;
        }))
    };
    // Start-up is over once the router is built and the background tasks above have had their
    // first go (their first round takes milliseconds): give back what only start-up needed.
    tokio::spawn(async {
        tokio::time::sleep(SETTLE).await;
        let _ = tokio::task::spawn_blocking(aria_sandbox::release_unused_memory).await;
    });
    let signal = wait_for_signal().await;
    eprintln!(
        "{signal}: stopping (no new runs; runs in flight get {}s)…",
        config.server.shutdown_grace_secs
    );
    gateway.shutdown.cancel();
    crate::daemon_client::remove(&config.data_dir);
    // No new scheduled runs; those in flight are drained with the other runs below.
    scheduler_stop.cancel();
    let _ = scheduler.await;
    let _ = status.await;
    if let Some(otlp) = otlp {
        let _ = otlp.await;
    }
    if let Some(retention) = retention {
        let _ = retention.await;
    }
    if let Some(telegram) = telegram.as_mut() {
        telegram.stop_polling().await;
    }
    let stopped = runs.drain(Duration::from_secs(config.server.shutdown_grace_secs)).await;
    if stopped > 0 {
        eprintln!("stopped {stopped} run(s) in flight; they are interrupted and can be resumed");
    }
    stop.cancel();
    // Open connections (a follower of a stopped run, a WebSocket) get a moment to close.
    match tokio::time::timeout(Duration::from_secs(5), server).await {
        Ok(Ok(Err(e))) => eprintln!("warning: the HTTP server ended with an error: {e}"),
        Err(_) => eprintln!("warning: some connections did not close in 5 s; closing them"),
        _ => {}
    }
    // What the stopped runs said still goes out; anything left waits in the outbox.
    if let Some(telegram) = telegram {
        telegram.stop(Duration::from_secs(3)).await;
    }
    if !gateway.agent.finish_background(Duration::from_secs(10)).await {
        eprintln!("warning: memory extraction did not finish in 10 s and was dropped");
    }
    eprintln!("stopped");
    Ok(OK)
}

/// Opens `url` in the desktop's browser (`xdg-open`), or says why not.
pub fn open_browser(url: &str) {
    let graphical = ["DISPLAY", "WAYLAND_DISPLAY"].iter().any(|v| std::env::var_os(v).is_some());
    if !graphical {
        eprintln!("note: no graphical session here (DISPLAY is not set): open the link yourself");
        return;
    }
    let spawned = std::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = spawned {
        eprintln!("note: cannot start xdg-open ({e}): open the link yourself");
    }
}

/// Records every tool call that a stopped process left running (killed, crashed) as
/// interrupted, so the audit log says how each call ended.
fn close_interrupted_calls(ctx: &Context) {
    let Ok(unfinished) = ctx.store.unfinished_sessions() else { return };
    let data_dir = &ctx.config.data_dir;
    for s in unfinished.iter().filter(|s| !aria_store::runlock::is_running(data_dir, &s.id)) {
        match ctx.store.audit_close_interrupted_calls(&s.id) {
            Ok(closed) if !closed.is_empty() => eprintln!(
                "note: {} call(s) of session {} were still running when ARIA stopped ({}); they \
                 are recorded as interrupted",
                closed.len(),
                s.id,
                closed.join(", ")
            ),
            Ok(_) => {}
            Err(e) => eprintln!("warning: cannot record the interrupted calls of {}: {e}", s.id),
        }
    }
}

/// How long after the listener is bound the daemon counts as started (see [`release`]).
const SETTLE: Duration = Duration::from_millis(300);

/// The scheduler loop: runs the jobs of `aria schedule` (and the built-in
/// heartbeat) at their slots and tells the user through the gateway's notifier.
fn start_scheduler(
    gateway: &Arc<Gateway>,
    config: &Config,
    stop: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    match crate::scheduled::ensure_heartbeat(&gateway.store, config.schedule.heartbeat.as_deref()) {
        Ok(Some(change)) => eprintln!("note: {change}"),
        Ok(None) => {}
        Err(e) => eprintln!("warning: cannot set up the heartbeat job: {e}"),
    }
    let scheduler = crate::scheduled::scheduler(gateway, config);
    // This process holds the daemon lock, so no other scheduler runs on this database: a claim
    // still open was left by a daemon that died, and is reported as interrupted now.
    match scheduler.recover() {
        Ok(runs) if !runs.is_empty() => eprintln!(
            "note: {} scheduled run(s) were interrupted when aria stopped; they are not rerun \
             (see `aria schedule history NAME`)",
            runs.len()
        ),
        Ok(_) => {}
        Err(e) => eprintln!("warning: cannot check for interrupted scheduled runs: {e}"),
    }
    let span = tracing::info_span!("scheduler");
    tokio::spawn(tracing::Instrument::instrument(scheduler.run(stop.clone()), span))
}

/// The OpenTelemetry export of finished runs, when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
fn start_otlp(
    gateway: &Arc<Gateway>,
    stop: &CancellationToken,
) -> Option<tokio::task::JoinHandle<()>> {
    use aria_gateway::otlp;
    let var = |k: &str| std::env::var(k).ok();
    let url = otlp::endpoint_from_env(var)?;
    match otlp::Exporter::new(&url, otlp::headers_from_env(var)) {
        Ok(exporter) => {
            eprintln!("Finished runs are exported to OpenTelemetry (OTEL_EXPORTER_OTLP_ENDPOINT).");
            let task =
                otlp::run(gateway.store.clone(), exporter, Duration::from_secs(5), stop.clone());
            Some(tokio::spawn(tracing::Instrument::instrument(task, tracing::info_span!("otlp"))))
        }
        Err(e) => {
            eprintln!("warning: {e}; runs are not exported");
            None
        }
    }
}

/// Waits for SIGINT or SIGTERM and names it.
async fn wait_for_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return "interrupt";
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => "interrupt",
            _ = term.recv() => "terminate",
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "interrupt"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_listener_needs_a_token_and_insecure() {
        let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let loopback: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert!(check_exposure(loopback, false, false).is_ok());
        let no_token = check_exposure(public, false, true).unwrap_err();
        assert_eq!(no_token.code, USAGE);
        assert!(no_token.error.to_string().contains("--new-token"));
        let no_flag = check_exposure(public, true, false).unwrap_err();
        assert!(no_flag.error.to_string().contains("--insecure"));
        assert!(check_exposure(public, true, true).is_ok());
    }

    #[test]
    fn the_unit_carries_the_shell_s_model_settings_but_no_keys() {
        let vars = [
            ("ARIA_MODEL", "qwen3:4b"),
            ("OLLAMA_HOST", "127.0.0.1:11434"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("ARIA_PROVIDER", "ollama"),
        ];
        let env = unit_environment(Path::new("/home/u/.local/share/aria"), |name| {
            vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
        });
        assert!(env.starts_with("Environment=ARIA_HOME="), "{env}");
        assert!(env.contains("Environment=ARIA_MODEL=qwen3:4b\n"), "{env}");
        assert!(env.contains("Environment=OLLAMA_HOST=127.0.0.1:11434\n"), "{env}");
        assert!(env.contains("Environment=ARIA_PROVIDER=ollama\n"), "{env}");
        assert!(!env.contains("sk-secret"), "keys stay out of the unit: {env}");
    }

    #[test]
    fn unit_words_are_quoted_when_needed() {
        assert_eq!(systemd_quote("/home/a/aria"), "/home/a/aria");
        assert_eq!(systemd_quote("/home/a b/x\"y"), "\"/home/a b/x\\\"y\"");
    }
}
