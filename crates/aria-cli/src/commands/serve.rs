//! `aria serve`: the daemon. One process owns the agent, the store and the models; the HTTP
//! API, the OpenAI-compatible endpoint and the web UI are its front ends (`aria-gateway`).
//! It refuses a second instance on the same `$ARIA_HOME`, refuses a non-loopback listener
//! without a token and `--insecure`, and stops gracefully on SIGINT/SIGTERM: no new runs, runs
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
    let token = api_token(&ctx.config.data_dir)?;
    check_exposure(listen, token.is_some(), args.insecure)?;
    let _instance = DaemonLock::acquire(&ctx.config.data_dir, &listen.to_string())
        .map_err(|e| usage(e.to_string()))?;
    app::settle_local_model(&mut ctx.config)?;
    let runtime = super::run::runtime()?;
    runtime.block_on(run_daemon(global.clone(), ctx, listen, token))
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

/// `ARIA_API_TOKEN`, else the token file; an unreadable or empty file is an error.
fn api_token(data_dir: &Path) -> CliResult<Option<String>> {
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

fn new_token(data_dir: &Path) -> CliResult<u8> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map_err(|e| CliError::failed(anyhow!("cannot read random bytes: {e}")))?;
    let token = format!("aria_{}", hex_encode(&bytes));
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
    let unit = format!(
        "[Unit]\nDescription=ARIA, the local AI agent (aria serve)\nAfter=network.target\n\n\
         [Service]\nType=simple\nExecStart={command}\nEnvironment=ARIA_HOME={home}\n\
         Restart=on-failure\nRestartSec=5\nKillSignal=SIGTERM\nTimeoutStopSec={grace}\n\n\
         [Install]\nWantedBy=default.target\n",
        home = systemd_quote(&config.data_dir.display().to_string()),
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
) -> CliResult<u8> {
    // Runs that died without finishing (a crash, kill -9), as every command reports them.
    ctx.report_interrupted();
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
    let security = Security::new(
        token,
        listen.ip().is_loopback(),
        config.server.allowed_origins.clone(),
        config.server.rate_limit_per_minute,
    );
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
        if gateway.security.token.is_some() { "token required" } else { "no token: loopback only" },
        config.provider.model,
        config.provider.name,
    );
    let mut telegram = super::telegram::start(&config.telegram, &gateway);
    let scheduler_stop = CancellationToken::new();
    let scheduler = start_scheduler(&gateway, &config, &scheduler_stop);
    let status = tokio::spawn(tracing::Instrument::instrument(
        aria_gateway::status::run(
            gateway.clone(),
            Duration::from_secs(config.server.status_interval_secs),
            scheduler_stop.clone(),
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
        let _ = tokio::task::spawn_blocking(release::after_start_up).await;
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

/// How long after the listener is bound the daemon counts as started (see [`release`]).
const SETTLE: Duration = Duration::from_millis(300);

/// Gives back, once the daemon is up, the memory that start-up alone needed (issue #19: the
/// idle RSS of `aria serve`). Start-up runs code from all over the 45 MB executable
/// (configuration, SQLite and its migrations, the tools' schemas, the router and its OpenAPI
/// description, the HTTP clients…), and the kernel maps the executable in 64 KiB windows
/// around each page touched: about 25 MiB of code and read-only data stayed mapped, most of
/// which an idle daemon never runs again. Two things are given back:
/// - the heap's free memory (`malloc_trim`): what start-up allocated and freed;
/// - the executable's read-only mappings (code, read-only data), unmapped with
///   `MADV_DONTNEED`. Those pages are the file's own, unchanged (mappings holding private
///   copies, such as the relocated `.data.rel.ro`, are left alone), so nothing is lost: a page
///   the daemon runs again is mapped again on that access, from the page cache (a minor fault)
///   or from disk if the kernel dropped it. The pages stay in the page cache as cache, which
///   the kernel reclaims first when memory is short; the daemon's RSS no longer counts them.
///   What the idle daemon and each request run comes back on first use (bench/README.md,
///   `aria serve`: the first health request and the first streamed answer after it measured
///   no slower than without it).
///
/// From then on, those mappings are mapped one page per fault rather than 64 KiB around each
/// ([`no_fault_around`]), so that what the idle daemon maps is what it runs.
///
/// `ARIA_SERVE_KEEP_STARTUP_MEMORY=1` skips it (to compare, or to rule it out).
#[allow(unsafe_code)]
mod release {
    pub fn after_start_up() {
        if std::env::var_os("ARIA_SERVE_KEEP_STARTUP_MEMORY").is_some_and(|v| v == "1") {
            return;
        }
        trim_heap();
        #[cfg(target_os = "linux")]
        if let Err(e) = unmap_startup_code() {
            tracing::debug!("could not give back the start-up code pages: {e}");
        }
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn trim_heap() {
        // SAFETY: malloc_trim only returns free heap memory to the kernel; it takes the
        // allocator's locks like any allocation and is safe to call from any thread.
        unsafe {
            libc::malloc_trim(0);
        }
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    fn trim_heap() {}

    /// Unmaps the executable's read-only, file-backed pages (see the module's comment).
    #[cfg(target_os = "linux")]
    fn unmap_startup_code() -> std::io::Result<()> {
        let smaps = std::fs::read_to_string("/proc/self/smaps")?;
        // The executable is the file mapped where this function's code is.
        let here = unmap_startup_code as *const () as usize;
        let mappings = parse(&smaps);
        let Some(exe) = mappings.iter().find(|m| m.start <= here && here < m.end) else {
            return Ok(());
        };
        let file = (exe.device.clone(), exe.inode);
        // Only the executable's own pages, only where it cannot have written (no `w`, and no
        // private copy of a page: `Anonymous: 0`).
        let unchanged: Vec<&Mapping> = mappings
            .iter()
            .filter(|m| (m.device.clone(), m.inode) == file && !m.writable && m.anonymous_kib == 0)
            .collect();
        for m in &unchanged {
            // SAFETY: the range is a whole mapping of the executable, read-only and without
            // any private (anonymous) page, so MADV_DONTNEED only drops page-table entries of
            // pages equal to the file's: the next access maps the same bytes again. No Rust
            // reference or object lives in these pages other than code and constants.
            let r = unsafe {
                libc::madvise(m.start as *mut libc::c_void, m.end - m.start, libc::MADV_DONTNEED)
            };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        if let Err(e) = no_fault_around(&unchanged) {
            tracing::debug!("the executable's pages are mapped around each fault: {e}");
        }
        Ok(())
    }

    /// Asks the kernel to map only the page the daemon touches in `mappings`, not the 64 KiB
    /// around it. On a page fault in a file mapping the kernel also maps the neighbouring pages
    /// that are in the page cache ("fault-around", `fault_around_bytes`): good for start-up,
    /// but for a daemon that runs a few scattered functions every 15 s (the status
    /// collection: 133 faults, about 0.5 MiB of code) it mapped 10 MiB of code it never runs.
    /// The kernel skips fault-around in a mapping registered with a userfaultfd for
    /// write-protection (`uffd_disable_fault_around`), so the mappings are registered with one
    /// in asynchronous mode (`UFFD_FEATURE_WP_ASYNC`, Linux 6.7): no page is write-protected
    /// and no fault is ever delivered to the daemon (a write would be resolved by the kernel
    /// itself, and these mappings are read-only), only fault-around stops. Pages are still
    /// mapped on use, one at a time, from the page cache. Where userfaultfd is unavailable
    /// (an older kernel, a seccomp profile) this returns the error and nothing changes.
    #[cfg(target_os = "linux")]
    fn no_fault_around(mappings: &[&Mapping]) -> std::io::Result<()> {
        use std::os::fd::{FromRawFd, OwnedFd};
        // <linux/userfaultfd.h>
        const UFFD_USER_MODE_ONLY: libc::c_long = 1;
        const UFFD_API: u64 = 0xAA;
        const UFFD_FEATURE_WP_ASYNC: u64 = 1 << 15;
        const UFFDIO_REGISTER_MODE_WP: u64 = 1 << 1;
        const UFFDIO_API: libc::c_ulong = 0xC018_AA3F; // _IOWR(0xAA, 0x3F, struct uffdio_api)
        const UFFDIO_REGISTER: libc::c_ulong = 0xC020_AA00; // _IOWR(0xAA, 0x00, uffdio_register)
        #[repr(C)]
        struct UffdioApi {
            api: u64,
            features: u64,
            ioctls: u64,
        }
        #[repr(C)]
        struct UffdioRegister {
            start: u64,
            len: u64,
            mode: u64,
            ioctls: u64,
        }
        // The registration lasts while the descriptor is open: for the daemon's life.
        static UFFD: std::sync::OnceLock<OwnedFd> = std::sync::OnceLock::new();
        if UFFD.get().is_some() {
            return Ok(());
        }
        let flags = libc::c_long::from(libc::O_CLOEXEC) | UFFD_USER_MODE_ONLY;
        // SAFETY: userfaultfd(2) takes flags only and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = i32::try_from(fd).map_err(std::io::Error::other)?;
        // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
        let mut api = UffdioApi { api: UFFD_API, features: UFFD_FEATURE_WP_ASYNC, ioctls: 0 };
        // SAFETY: UFFDIO_API reads and writes a `struct uffdio_api`, which `api` is (repr(C),
        // the kernel's layout and size, checked by the ioctl number's size field).
        if unsafe { libc::ioctl(raw, UFFDIO_API, &mut api as *mut UffdioApi) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        for m in mappings {
            let mut register = UffdioRegister {
                start: m.start as u64,
                len: (m.end - m.start) as u64,
                mode: UFFDIO_REGISTER_MODE_WP,
                ioctls: 0,
            };
            // SAFETY: UFFDIO_REGISTER reads and writes a `struct uffdio_register` (same
            // layout); the range is a whole mapping of this process.
            let r = unsafe { libc::ioctl(raw, UFFDIO_REGISTER, &mut register as *mut _) };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        let _ = UFFD.set(fd);
        Ok(())
    }

    #[derive(Debug)]
    struct Mapping {
        start: usize,
        end: usize,
        writable: bool,
        device: String,
        inode: u64,
        anonymous_kib: u64,
    }

    /// The mappings of `/proc/self/smaps` with what [`unmap_startup_code`] needs. A mapping
    /// whose `Anonymous:` line is missing counts as holding private pages (left alone).
    fn parse(smaps: &str) -> Vec<Mapping> {
        let mut mappings: Vec<Mapping> = Vec::new();
        for line in smaps.lines() {
            let mut words = line.split_whitespace();
            let Some(first) = words.next() else { continue };
            if let Some((start, end)) = first.split_once('-')
                && let (Ok(start), Ok(end)) =
                    (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16))
            {
                let perms = words.next().unwrap_or("");
                let _offset = words.next();
                let device = words.next().unwrap_or("").to_owned();
                let inode = words.next().and_then(|i| i.parse().ok()).unwrap_or(0);
                mappings.push(Mapping {
                    start,
                    end,
                    writable: perms.contains('w') || perms.contains('s'),
                    device,
                    inode,
                    anonymous_kib: u64::MAX,
                });
            } else if first == "Anonymous:"
                && let Some(m) = mappings.last_mut()
            {
                m.anonymous_kib = words.next().and_then(|k| k.parse().ok()).unwrap_or(u64::MAX);
            }
        }
        // Anonymous memory has inode 0: never the executable.
        mappings.retain(|m| m.inode != 0);
        mappings
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn only_read_only_pages_of_a_file_without_private_copies() {
            let smaps = "\
55d0-55e0 r--p 00000000 fd:01 42 /usr/bin/aria
Size: 64 kB
Anonymous: 0 kB
55e0-55f0 r-xp 00010000 fd:01 42 /usr/bin/aria
Anonymous: 0 kB
55f0-5600 r--p 00020000 fd:01 42 /usr/bin/aria
Anonymous: 64 kB
5600-5610 rw-p 00030000 fd:01 42 /usr/bin/aria
Anonymous: 8 kB
7f00-7f10 rw-p 00000000 00:00 0
Anonymous: 64 kB
";
            let m = super::parse(smaps);
            assert_eq!(m.len(), 4);
            assert_eq!((m[1].start, m[1].end, m[1].inode), (0x55e0, 0x55f0, 42));
            assert!(!m[0].writable && m[0].anonymous_kib == 0);
            assert_eq!(m[2].anonymous_kib, 64);
            assert!(m[3].writable);
        }
    }
}

/// The scheduler loop (issue #21): runs the jobs of `aria schedule` (and the built-in
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
    fn unit_words_are_quoted_when_needed() {
        assert_eq!(systemd_quote("/home/a/aria"), "/home/a/aria");
        assert_eq!(systemd_quote("/home/a b/x\"y"), "\"/home/a b/x\\\"y\"");
    }
}
