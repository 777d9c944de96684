//! The command line. Names of commands, flags and exit codes are a public contract.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod jobs;
pub use jobs::*;

#[derive(Debug, Parser)]
#[command(
    name = "aria",
    version,
    about = "ARIA: a local-first AI agent that works on your machine inside boundaries it enforces, and can prove what it did.",
    after_help = "Exit codes for `aria run`: 0 done, 1 failed, 2 usage or configuration error, 130 cancelled.\nConfiguration: aria.toml (--config, $ARIA_CONFIG or ~/.config/aria/aria.toml), then environment, then flags."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// Configuration file to read instead of $ARIA_CONFIG or ~/.config/aria/aria.toml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A directory ARIA's tools may work in (repeatable). Overrides ARIA_ROOTS and [scope] roots;
    /// with none of them, ARIA works in the current directory (never implicitly in $HOME or /).
    #[arg(long = "root", global = true, value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Model name to use (overrides ARIA_MODEL and [provider] model).
    #[arg(long, global = true)]
    pub model: Option<String>,
    /// Model provider (overrides ARIA_PROVIDER): local (the embedded model; the default when no
    /// server is configured), ollama (Ollama's native API), openai (any OpenAI-compatible
    /// server) or anthropic.
    #[arg(long, global = true)]
    pub backend: Option<String>,
    /// Approval mode: governed (default), supervised or read_only.
    #[arg(long, global = true)]
    pub mode: Option<String>,
    /// Show what each step would do and change nothing.
    #[arg(long, global = true)]
    pub dry_run: bool,
    /// Approve in advance (repeatable): a tool name (python_run) or a command prefix ("cargo
    /// test") that every simple command of a shell line must start with. Never widens what is
    /// blocked. Adds to [policy] allow.
    #[arg(long, global = true, value_name = "PATTERN")]
    pub allow: Vec<String>,
    /// Approve every action this run asks about, for this run only (blocked stays blocked).
    #[arg(long, global = true)]
    pub yes: bool,
    /// With no model server and no model named: use the larger embedded model
    /// (qwen2.5-coder-1.5b-instruct, a one-time 1.1 GB download) without asking, when this
    /// machine has the memory for it. The choice is kept for later runs.
    #[arg(long, global = true)]
    pub accept_download: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Talk to ARIA: one message, or an interactive session when no message is given.
    Chat(ChatArgs),
    /// Run one task to completion (for scripts): prints the answer, exits 0/1/2/130.
    Run(RunArgs),
    /// The tools the model can use.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Past conversations.
    #[command(subcommand)]
    Conversations(ConversationsCommand),
    /// Runs (sessions), including interrupted ones that can be resumed.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// MCP servers: their state and tools, a test, and adding one to aria.toml.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Agent profiles: the built-in ones and those of aria.toml ([agents.NAME]).
    #[command(subcommand)]
    Agents(AgentsCommand),
    /// Plugins: tools in a directory with a plugin.toml manifest, run in the sandbox.
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// Search the web with the configured provider (BRAVE_API_KEY or SEARXNG_URL), or look
    /// at the search cache: `aria search QUERY`, `aria search cache stats|clear`.
    Search(SearchArgs),
    /// Every run as a trace: its model and tool calls with times, tokens, cost and outcome.
    #[command(subcommand)]
    Traces(TracesCommand),
    /// Numbers over a period: runs, success rate, p50/p95/p99 latency per model and per tool,
    /// tokens, cost, errors by kind.
    Stats(StatsArgs),
    /// ARIA's own log (JSON lines under $ARIA_HOME/logs, rotated by size), readable: filter by
    /// level and time, or follow it as it grows.
    Logs(LogsArgs),
    /// The tamper-evident audit log.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Embedded models: fetch them (sha256-verified) and see what is on this machine.
    #[command(subcommand)]
    Model(ModelCommand),
    /// Model backends (Ollama, OpenAI-compatible, Anthropic): what each offers, a health check
    /// with latency, unloading an Ollama model.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// Model spend by day, model and session, against the per-task, daily and monthly caps.
    Cost(CostArgs),
    /// Ask one guard for its verdict and reason: why a path, command, text was refused or flagged.
    #[command(subcommand)]
    Check(CheckCommand),
    /// What this machine and configuration give ARIA: data directory, roots, model, and which
    /// sandbox protections the kernel actually enforces (and which it cannot).
    Doctor(DoctorArgs),
    /// Restore points: the git snapshots ARIA takes before every write, newest first.
    #[command(subcommand)]
    Snapshots(SnapshotsCommand),
    /// Put the files of a snapshot (or one file) back and record a revert commit; the user's
    /// branch, HEAD and index are left alone. Limit the search to one root with --root DIR.
    Rollback(RollbackArgs),
    /// Long-term memory: search, list, show, add, edit, forget, import a JSONL file, and
    /// re-embed everything after changing the embedder ([memory] embedder).
    #[command(subcommand)]
    Memories(MemoriesCommand),
    /// The always-on ARIA: a daemon with the HTTP API, the OpenAI-compatible endpoint and the
    /// web UI (http://127.0.0.1:8080/). Runs in the foreground; Ctrl-C or SIGTERM stops it
    /// gracefully.
    Serve(ServeArgs),
    /// Find the model servers running here (Ollama, LM Studio, llama.cpp, vLLM) and the
    /// provider keys set, check a model with one answer and one tool call, and write it into
    /// aria.toml.
    Setup(SetupArgs),
    /// Print (and open, on a desktop) a fresh one-time login link to the web UI of the
    /// running `aria serve`.
    Ui(UiArgs),
    /// API tokens for clients of `aria serve`, each with a scope (read, chat, mcp, admin).
    #[command(subcommand)]
    Tokens(TokensCommand),
    /// The Telegram channel of `aria serve`.
    #[command(subcommand)]
    Telegram(TelegramCommand),
    /// Scheduled jobs (cron expressions in a time zone) that `aria serve` runs, and a
    /// calculator of fire times.
    #[command(subcommand)]
    Schedule(ScheduleCommand),
}

#[derive(Debug, Subcommand)]
pub enum TracesCommand {
    /// Runs newest first, each with its models and tools, calls, time and cost.
    List {
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// One run's timeline: each model and tool call with its start, duration, tokens, cost,
    /// tier, output size, restore point and outcome.
    Show {
        /// A session id, or a unique prefix of at least 4 characters.
        id: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The period: 7d, 24h, 30m, or an RFC 3339 instant.
    #[arg(long, default_value = "7d")]
    pub since: String,
    /// Latency fields are `p50_ms`, `p95_ms`, `p99_ms`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Keep printing lines as they are appended, across rotations (Ctrl-C stops).
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// The least severe level shown.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub level: Option<LogLevel>,
    /// Only lines since: a period back from now (30m, 1h, 2d) or an RFC 3339 instant.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// The lines as written (JSON lines), not rendered.
    #[arg(long)]
    pub json: bool,
    /// At most the last N matching lines (0: all).
    #[arg(long, short = 'n', default_value_t = 100, value_name = "N")]
    pub limit: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    #[value(alias = "warning")]
    Warn,
    Error,
}

#[derive(Debug, Subcommand)]
pub enum TelegramCommand {
    /// The chats that wrote to the bot, most recent first, to copy into [telegram]
    /// allowed_chat_ids.
    Chats {
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Listen on ADDR:PORT (default `[server] listen`, else 127.0.0.1:8080). An address that
    /// is not loopback needs an API token and --insecure.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Serve on a non-loopback address over plain HTTP (the token crosses the network
    /// unencrypted: prefer a loopback listener behind `tailscale serve` or a Cloudflare Tunnel).
    #[arg(long)]
    pub insecure: bool,
    /// Make a new API token, store it in $ARIA_HOME/api-token (mode 0600), print it once, and
    /// exit. From then on every request needs it.
    #[arg(long, conflicts_with = "install")]
    pub new_token: bool,
    /// Write a systemd user unit that runs `aria serve` (and print how to enable it), then exit.
    #[arg(long)]
    pub install: bool,
    /// Open the web UI in the desktop's browser, logged in (the one-time link).
    #[arg(long, conflicts_with_all = ["install", "new_token"])]
    pub open: bool,
}

#[derive(Debug, Args)]
pub struct SetupArgs {
    /// Use this model without asking: BACKEND/MODEL, e.g. ollama/qwen3:4b.
    #[arg(long = "use", value_name = "BACKEND/MODEL")]
    pub use_model: Option<String>,
    /// Also look for a server at this URL (an OpenAI-compatible `/v1` base, or Ollama's).
    #[arg(long, value_name = "URL")]
    pub probe: Vec<String>,
    /// What was found (and, with --use, what was checked and written) as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct UiArgs {
    /// Only print the link; do not open a browser.
    #[arg(long)]
    pub print: bool,
}

#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// Make a token for one client of `aria serve` and print it once. Scopes: `read` (GET
    /// only), `chat` (conversations, runs, the OpenAI-compatible endpoint), `mcp` (/mcp only),
    /// `admin` (everything, answering approvals included).
    Add {
        /// A name for the client: letters, digits, `.`, `_`, `-`.
        name: String,
        #[arg(long, value_parser = ["read", "chat", "mcp", "admin"])]
        scope: String,
        #[arg(long)]
        json: bool,
    },
    /// The tokens made with `aria tokens add` (names and scopes; never their values).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token: requests carrying it are refused from then on.
    Remove { name: String },
}

/// `aria memories search --retriever`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SearchModeArg {
    Hybrid,
    Bm25,
    Vector,
}

#[derive(Debug, Subcommand)]
pub enum MemoriesCommand {
    /// Hybrid search (BM25 + vectors, fused by standardised scores) over active memories.
    Search {
        /// The query (or --queries FILE for many).
        #[arg(required_unless_present = "queries")]
        query: Option<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[arg(long)]
        json: bool,
        /// Which retrievers rank: hybrid (both, fused), bm25 (full text only) or vector.
        /// (`--mode` is the global approval mode.)
        #[arg(long, value_enum, default_value_t = SearchModeArg::Hybrid)]
        retriever: SearchModeArg,
        /// Run every query of FILE.jsonl (one {"id", "text"} per line) and print one JSON line
        /// per query, {"id", "hits": [...]}, in order (for evaluation; accesses are not counted).
        #[arg(long, value_name = "FILE", conflicts_with = "query")]
        queries: Option<PathBuf>,
        /// Search here even when `aria serve` runs for this ARIA_HOME (by default it is asked:
        /// its embedder is loaded and its vectors are in memory).
        #[arg(long)]
        direct: bool,
    },
    /// Memories, most recently changed first (active and archived; --all adds forgotten ones).
    List {
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// One memory with its provenance.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Remember TEXT (a fact unless --kind says otherwise).
    Add {
        text: String,
        /// fact, preference, event, skill or document.
        #[arg(long, default_value = "fact")]
        kind: String,
        /// A category (repeatable).
        #[arg(long = "category", value_name = "NAME")]
        categories: Vec<String>,
        /// Never send this memory to a model off this machine (a remote provider).
        #[arg(long)]
        private: bool,
        #[arg(long)]
        json: bool,
    },
    /// Replace a memory's text with TEXT, or with what you write in $EDITOR when TEXT is absent
    /// (unless only --private or --public is given).
    Edit {
        id: String,
        text: Option<String>,
        /// Mark the memory private: never sent to a model off this machine.
        #[arg(long, conflicts_with = "public")]
        private: bool,
        /// Mark the memory public again: it may be recalled for any configured model.
        #[arg(long)]
        public: bool,
    },
    /// Forget a memory: it leaves search for good; the audit log keeps the record.
    Forget { id: String },
    /// Confirm a memory the model stored after reading outside text (listed as
    /// `[unconfirmed]`): only then is it recalled into prompts.
    Confirm { id: String },
    /// Import FILE.jsonl, one {"id", "text"} object per line; the ids are kept. Bad lines are
    /// reported with their numbers and nothing is imported; a rerun after a failure skips what
    /// is already there.
    Import {
        file: PathBuf,
        /// The kind given to every imported memory.
        #[arg(long, default_value = "document")]
        kind: String,
        /// Mark every imported memory private (automatic for a file under a --root).
        #[arg(long)]
        private: bool,
    },
    /// Embed every memory that has no vector of the configured embedder (after changing it, or
    /// after an interrupted import). Resumable: run it again to continue.
    Reindex,
}

#[derive(Debug, Subcommand)]
pub enum SnapshotsCommand {
    /// Restore points with id, time, operation, session and files changed, newest first.
    /// --root DIR limits the list to the repositories under DIR.
    List {
        /// Only restore points that concern this file or directory (it changed, was targeted,
        /// or differs from it now).
        #[arg(long, value_name = "FILE")]
        path: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Delete snapshot branches older than [snapshots] prune_after_days (never the newest of a
    /// repository). ARIA also prunes after each snapshot.
    Prune,
}

#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// The snapshot id from `aria snapshots list` (the `snapshot/` prefix may be left out; a
    /// commit id prefix works too).
    pub id: String,
    /// Restore only this file or directory; other files are left as they are.
    #[arg(long, value_name = "FILE")]
    pub path: Option<PathBuf>,
    /// Print {snapshot, repository, restored, revert_commit, branch} as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The message; omit it for an interactive session.
    pub message: Option<String>,
    /// Continue this conversation instead of starting a new one.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Run as this agent (aria agents list): its prompt, model chain and tools, and its mode
    /// and caps where they are stricter.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task (the same as giving it as the argument).
    #[arg(long = "task", value_name = "TASK", conflicts_with = "resume")]
    pub task: Option<String>,
    /// The task: `aria run "What port is set in settings.ini?"`.
    #[arg(
        value_name = "TASK",
        required_unless_present_any = ["resume", "task"],
        conflicts_with_all = ["task", "resume"]
    )]
    pub task_words: Option<String>,
    /// Resume an interrupted or failed session.
    #[arg(long, value_name = "SESSION_ID")]
    pub resume: Option<String>,
    /// Continue this conversation.
    #[arg(long, value_name = "ID", conflicts_with = "resume")]
    pub conversation: Option<String>,
    /// Run as this agent (aria agents list): its prompt, model chain and tools, and its mode
    /// and caps where they are stricter.
    #[arg(long, value_name = "NAME", conflicts_with = "resume")]
    pub agent: Option<String>,
    /// Print {session_id, state, answer, iterations, usage, cost_usd} as JSON.
    #[arg(long)]
    pub json: bool,
}

impl RunArgs {
    /// The task, given with `--task` or as the argument.
    pub fn task(&self) -> Option<&str> {
        self.task.as_deref().or(self.task_words.as_deref())
    }
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List tools with their descriptions and argument schemas.
    List {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConversationsCommand {
    /// Most recent first.
    List {
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// One conversation with all its messages.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Most recent first; interrupted runs are marked.
    List {
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Text,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Audit records, oldest first.
    List {
        /// Only the last N records.
        #[arg(long, value_name = "N")]
        last: Option<usize>,
        #[arg(long)]
        json: bool,
    },
    /// Export one session's records; the JSON bundle can be verified offline.
    Export {
        #[arg(long, value_name = "ID")]
        session_id: String,
        #[arg(long, value_enum, default_value = "json")]
        format: ExportFormat,
        /// Write to this file instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Check the hash chain: exit 0 with the record count, or exit 1 naming the first bad record.
    Verify {
        /// Only this session's records.
        #[arg(long, value_name = "ID", conflicts_with = "file")]
        session_id: Option<String>,
        /// Verify an exported bundle instead of the database.
        #[arg(long, value_name = "BUNDLE")]
        file: Option<PathBuf>,
        /// A head printed earlier by `aria audit head` and kept off this machine: exit 1 if
        /// that record is missing (the log was cut short) or different (rewritten), whatever
        /// audit-head.json says.
        #[arg(
            long,
            value_name = "SEQ:HASH",
            value_parser = parse_head,
            conflicts_with_all = ["file", "session_id"]
        )]
        expect_head: Option<crate::anchor::Anchor>,
    },
    /// Print the head of the audit log, the last record, as one line `SEQ:HASH` (after
    /// verifying the log). Keep it off this machine; `aria audit verify --expect-head SEQ:HASH`
    /// then proves the log was neither cut short nor rewritten up to that record.
    Head,
}

fn parse_head(text: &str) -> Result<crate::anchor::Anchor, String> {
    text.parse()
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// The effective configuration (secrets redacted).
    Show {
        #[arg(long)]
        json: bool,
    },
    /// Where the configuration file is (or would be) read from, and the data directory.
    Path,
    /// Validate the configuration and the roots; exit 2 on problems.
    Check,
}

/// Exit codes for `aria check`: 0 when every input passes (allow, read, clean, benign), 1 when
/// any does not, 2 for usage errors (including unreadable JSON lines).
#[derive(Debug, Subcommand)]
pub enum CheckCommand {
    /// The path guard: allow or block, judged against --root DIR (repeatable) or the configured
    /// roots. An existing path is judged for reading, with a note when writing it is refused
    /// (files that configure ARIA or git); a path that does not exist yet is judged as a file
    /// that would be created.
    Path(CheckArgs),
    /// The shell classifier: read, recoverable-write, irreversible or blocked (exit 0 only for
    /// read).
    Command(CheckArgs),
    /// The outbound secret filter: secret (naming the kinds found) or clean.
    Secrets(CheckArgs),
    /// The prompt-injection filter: injection (naming the kinds and what matched) or benign.
    Injection(CheckArgs),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The input to check; `-` reads it (all of stdin, which may span lines) from stdin.
    #[arg(required_unless_present = "jsonl", conflicts_with = "jsonl")]
    pub input: Option<String>,
    /// Read JSON Lines from stdin, each with an "input" field, and print one JSON line
    /// {input, verdict, reason} per input.
    #[arg(long)]
    pub jsonl: bool,
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Fetch models into $ARIA_HOME/models (or ARIA_MODELS_DIR): the default chat and embedding
    /// models when no NAME is given. Resumable; every file is checked against a pinned sha256.
    Pull {
        /// Catalog names (see `aria model list`).
        names: Vec<String>,
        /// The recommended chat model (and the default embedder), made the embedded choice when
        /// this machine has the memory for it: what a script runs instead of answering the
        /// first chat's question.
        #[arg(long, conflicts_with = "names")]
        recommended: bool,
    },
    /// The model catalog and what is installed.
    List {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// What each configured backend offers (the chain, and backends whose credentials are set).
    List {
        #[arg(long)]
        json: bool,
    },
    /// A tiny chat with each backend of the chain, or only the one given with --backend, with
    /// the latency to the first token; exit 1 when one fails.
    Test {
        #[arg(long)]
        json: bool,
    },
    /// Unload a model from Ollama's memory now (keep_alive 0).
    Unload {
        /// The model (default: the configured Ollama model).
        model: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct CostArgs {
    /// Days of history in the report, today included (0 or 1: today only).
    #[arg(long, default_value_t = 30)]
    pub days: u32,
    /// Sessions listed at most.
    #[arg(long, default_value_t = 20)]
    pub sessions: usize,
    #[arg(long)]
    pub json: bool,
}
